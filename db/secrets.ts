/**
 * The re-encryption pass over stored secrets, run by the migration job after the migrations (db/migrate.ts):
 * seals every value still stored in plaintext (from before encryption existed) and re-seals every value sealed
 * with a key other than the keyring's active one (key rotation), in batches. Idempotent: a second run finds
 * nothing to do. It reports counts only, never a value.
 *
 * Concurrency: a row is rewritten only if it still holds the value the pass read, so a process writing the same
 * row meanwhile (an API creating or rotating, in a rolling deploy) wins and the row is left for the next run.
 * Failure: a value that does not open (sealed with a key ENCRYPTION_KEYS no longer holds, or altered) is left as
 * it is and counted under `unreadable` with its key id; using it fails the same way until the key is added back.
 */
import { and, asc, eq, gt, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm';
import { isPlaintext, kidOf, places, type Keyring } from '../domain/secrets';
import type { Db } from './client';
import { automations, integrations, webhookSubscriptions } from './schema';

interface ResealCounts {
  /** Plaintext values sealed. */
  encrypted: number;
  /** Values moved from an older key to the active one. */
  reencrypted: number;
  /** Values that did not open (left as they are). */
  unreadable: number;
}

export interface ResealReport {
  /** The key every value is sealed with after the pass (but the unreadable ones). */
  activeKid: string;
  sourceApiKeys: ResealCounts;
  signingSecrets: ResealCounts;
  /** Automations' HTTP destination headers. */
  automationHeaders: ResealCounts;
  /** Key ids of the values that did not open. */
  unreadableKids: string[];
}

const DEFAULT_BATCH = 500;

type Resealed = { value: string; was: 'encrypted' | 'reencrypted' } | null;

/** The new form of one stored value; null when it is current already or does not open (then counted as unreadable). */
function reseal(secrets: Keyring, stored: string, place: string, counts: ResealCounts, unreadable: Set<string>): Resealed {
  if (secrets.isCurrent(stored)) return null;
  let plaintext: string;
  try {
    plaintext = secrets.open(stored, place);
  } catch {
    counts.unreadable++;
    unreadable.add(kidOf(stored) ?? '(malformed)');
    return null;
  }
  return { value: secrets.seal(plaintext, place), was: isPlaintext(stored) ? 'encrypted' : 'reencrypted' };
}

/** Seal or re-seal every stored secret that is not sealed with the active key. */
export async function resealStoredSecrets(db: Db, secrets: Keyring, opts: { batch?: number } = {}): Promise<ResealReport> {
  const batch = opts.batch ?? DEFAULT_BATCH;
  const prefix = `enc:v1:${secrets.activeKid}:`;
  const unreadable = new Set<string>();
  const sourceApiKeys: ResealCounts = { encrypted: 0, reencrypted: 0, unreadable: 0 };
  const signingSecrets: ResealCounts = { encrypted: 0, reencrypted: 0, unreadable: 0 };
  const automationHeaders: ResealCounts = { encrypted: 0, reencrypted: 0, unreadable: 0 };

  // The source's secret: `api_key`, or `client_secret` for a buildium-style source (domain/secrets.ts sourceSecretField).
  const secretPath = sql`(case when ${integrations.sourceConfig}->>'dialect' = 'buildium' then '{client_secret}' else '{api_key}' end)::text[]`;
  const apiKey = sql<string>`${integrations.sourceConfig} #>> ${secretPath}`;
  for (let cursor: string | null = null; ; ) {
    const rows: { id: string; apiKey: string }[] = await db
      .select({ id: integrations.id, apiKey })
      .from(integrations)
      .where(and(cursor === null ? undefined : gt(integrations.id, cursor), sql`not starts_with(${apiKey}, ${prefix})`))
      .orderBy(asc(integrations.id))
      .limit(batch);
    await db.transaction(async (tx) => {
      for (const r of rows) {
        const next = reseal(secrets, r.apiKey, places.sourceApiKey(r.id), sourceApiKeys, unreadable);
        if (next === null) continue;
        const done = await tx
          .update(integrations)
          .set({ sourceConfig: sql`jsonb_set(${integrations.sourceConfig}, ${secretPath}, to_jsonb(${next.value}::text))` })
          .where(and(eq(integrations.id, r.id), sql`${apiKey} = ${r.apiKey}`))
          .returning({ id: integrations.id });
        if (done.length > 0) sourceApiKeys[next.was]++;
      }
    });
    if (rows.length < batch) break;
    cursor = rows[rows.length - 1]!.id;
  }

  const stale = (column: typeof webhookSubscriptions.secret | typeof webhookSubscriptions.previousSecret): SQL =>
    and(isNotNull(column), sql`not starts_with(${column}, ${prefix})`)!;
  for (let cursor: string | null = null; ; ) {
    const rows = await db
      .select({ id: webhookSubscriptions.id, secret: webhookSubscriptions.secret, previousSecret: webhookSubscriptions.previousSecret })
      .from(webhookSubscriptions)
      .where(
        and(
          cursor === null ? undefined : gt(webhookSubscriptions.id, cursor),
          or(stale(webhookSubscriptions.secret), stale(webhookSubscriptions.previousSecret)),
        ),
      )
      .orderBy(asc(webhookSubscriptions.id))
      .limit(batch);
    await db.transaction(async (tx) => {
      for (const r of rows) {
        const place = places.signingSecret(r.id);
        const secret = reseal(secrets, r.secret, place, signingSecrets, unreadable);
        const previous = r.previousSecret === null ? null : reseal(secrets, r.previousSecret, place, signingSecrets, unreadable);
        if (secret === null && previous === null) continue;
        // Rewritten only while both columns hold what was read (a rotation in between wins).
        const done = await tx
          .update(webhookSubscriptions)
          .set({ ...(secret ? { secret: secret.value } : {}), ...(previous ? { previousSecret: previous.value } : {}) })
          .where(
            and(
              eq(webhookSubscriptions.id, r.id),
              eq(webhookSubscriptions.secret, r.secret),
              r.previousSecret === null ? isNull(webhookSubscriptions.previousSecret) : eq(webhookSubscriptions.previousSecret, r.previousSecret),
            ),
          )
          .returning({ id: webhookSubscriptions.id });
        if (done.length === 0) continue;
        for (const v of [secret, previous]) if (v) signingSecrets[v.was]++;
      }
    });
    if (rows.length < batch) break;
    cursor = rows[rows.length - 1]!.id;
  }

  for (let cursor: string | null = null; ; ) {
    const rows = await db
      .select({ id: automations.id, headers: automations.destinationHeaders })
      .from(automations)
      .where(
        and(
          cursor === null ? undefined : gt(automations.id, cursor),
          isNotNull(automations.destinationHeaders),
          sql`not starts_with(${automations.destinationHeaders}, ${prefix})`,
        ),
      )
      .orderBy(asc(automations.id))
      .limit(batch);
    await db.transaction(async (tx) => {
      for (const r of rows) {
        const next = reseal(secrets, r.headers!, places.automationHeaders(r.id), automationHeaders, unreadable);
        if (next === null) continue;
        const done = await tx
          .update(automations)
          .set({ destinationHeaders: next.value })
          .where(and(eq(automations.id, r.id), eq(automations.destinationHeaders, r.headers!)))
          .returning({ id: automations.id });
        if (done.length > 0) automationHeaders[next.was]++;
      }
    });
    if (rows.length < batch) break;
    cursor = rows[rows.length - 1]!.id;
  }

  return { activeKid: secrets.activeKid, sourceApiKeys, signingSecrets, automationHeaders, unreadableKids: [...unreadable].sort() };
}

/** One line for the migration job's output: counts and key ids only. */
export function describeReseal(r: ResealReport): string {
  const part = (what: string, c: ResealCounts) =>
    `${what} ${c.encrypted} encrypted, ${c.reencrypted} re-encrypted${c.unreadable ? `, ${c.unreadable} unreadable` : ''}`;
  const advice = r.unreadableKids.length
    ? `; the unreadable ones were sealed with key ${r.unreadableKids.join(', ')}, which ENCRYPTION_KEYS lacks: add it back and run the migration again`
    : '';
  return `stored secrets now under key ${r.activeKid}: ${part('source api keys', r.sourceApiKeys)}; ${part('webhook signing secrets', r.signingSecrets)}; ${part('automation headers', r.automationHeaders)}${advice}`;
}
