/** The CLI's nouns and verbs, a table: each verb maps its arguments and flags onto one admin API call (or a few, for --wait). */
import type { Noun } from '../command';
import { org } from './org';
import { integration } from './integration';
import { key } from './key';
import { sync } from './sync';
import { operations } from './operations';
import { sandbox } from './sandbox';
import { webhook } from './webhook';
import { automation } from './automation';
import { events } from './events';
import { health } from './health';

/** In the order `--help` lists them. */
export const NOUNS: Record<string, Noun> = { org, integration, key, sync, operations, sandbox, webhook, events, automation, health };
