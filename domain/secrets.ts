/**
 * Secrets at rest: a source's `api_key`, a webhook subscription's signing secrets and an automation's destination
 * headers (they may carry credentials) are stored encrypted with AES-256-GCM under a keyring from configuration
 * (ENCRYPTION_KEYS). The first key of the ring seals new values; every key of the ring opens, so keys rotate by
 * putting a new one first and keeping the old ones until the re-encryption pass (db/secrets.ts, run after
 * migrations) has moved every value to the new key.
 *
 * Stored form: `enc:v1:<kid>:<iv>:<tag>:<ciphertext>` (base64url, a random 12-byte IV per value), so each value
 * names the key that sealed it. A value is bound (as additional authenticated data) to its place, the column and
 * the row it belongs to: copied to another row, it no longer opens.
 *
 * Failure: opening a value whose key id the ring lacks, or one altered, moved or sealed with another key of that
 * id, throws SecretError naming the key id and never the value. A value without the `enc:` prefix is a plaintext
 * stored before encryption existed: it is returned as it is, only so that everything keeps working until the
 * re-encryption pass has found and sealed it.
 *
 * Impure on purpose (domain/README.md): node:crypto for the cipher and its IVs; never imported by workflows.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** One key of the ring: an id stored beside every value it seals, and 32 bytes of key material. */
export interface EncryptionKey {
  kid: string;
  key: Uint8Array;
}

export interface Keyring {
  /** Id of the key that seals new values (the first of the ring). */
  readonly activeKid: string;
  /** Encrypt `plaintext` for `place` (see `places`) with the active key. */
  seal(plaintext: string, place: string): string;
  /** Decrypt a stored value of `place`; a legacy plaintext (no `enc:` prefix) is returned as it is. */
  open(stored: string, place: string): string;
  /** Whether a stored value is sealed with the active key (false for a plaintext or a value of an older key). */
  isCurrent(stored: string): boolean;
}

/** A stored secret that cannot be opened (or a value that must not be sealed). Never carries the value. */
export class SecretError extends Error {
  override name = 'SecretError';
}

const MARK = 'enc:';
const PREFIX = 'enc:v1:';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Key ids travel inside the stored form, whose fields are separated by colons. */
const KID_PATTERN = /^[A-Za-z0-9_-]{1,32}$/;

/** Where a stored secret lives: the additional authenticated data that binds a value to its column and row. */
export const places = {
  sourceApiKey: (integrationId: string) => `integrations.source_config.api_key/${integrationId}`,
  /** The subscription's current and previous secret share one place: a rotation moves the value between them. */
  signingSecret: (subscriptionId: string) => `webhook_subscriptions.secret/${subscriptionId}`,
  /** An automation's HTTP destination headers (they may carry credentials), as one JSON object. */
  automationHeaders: (automationId: string) => `automations.destination_headers/${automationId}`,
};

/** Whether a stored value is a plaintext from before encryption (the re-encryption pass seals those). */
export function isPlaintext(stored: string): boolean {
  return !stored.startsWith(MARK);
}

/** The id of the key that sealed a stored value; null for a plaintext. */
export function kidOf(stored: string): string | null {
  if (!stored.startsWith(PREFIX)) return null;
  const kid = stored.slice(PREFIX.length).split(':', 1)[0];
  return kid || null;
}

export function createKeyring(keys: readonly EncryptionKey[]): Keyring {
  if (keys.length === 0) throw new SecretError('the keyring needs at least one key');
  const byKid = new Map<string, Uint8Array>();
  for (const { kid, key } of keys) {
    if (!KID_PATTERN.test(kid)) throw new SecretError(`key id "${kid}" is not 1-32 characters of [A-Za-z0-9_-]`);
    if (key.length !== KEY_BYTES) throw new SecretError(`key ${kid} has ${key.length} bytes; AES-256 needs ${KEY_BYTES}`);
    if (byKid.has(kid)) throw new SecretError(`key id ${kid} appears twice`);
    byKid.set(kid, key);
  }
  const active = keys[0]!;

  return {
    activeKid: active.kid,

    seal(plaintext, place) {
      // Sealing a sealed value would store a ciphertext that opens to another ciphertext.
      if (plaintext.startsWith(PREFIX)) throw new SecretError('refusing to seal a value that is already sealed');
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', active.key, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(place, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      const tag = cipher.getAuthTag();
      return `${PREFIX}${active.kid}:${iv.toString('base64url')}:${tag.toString('base64url')}:${ciphertext.toString('base64url')}`;
    },

    open(stored, place) {
      if (isPlaintext(stored)) return stored;
      if (!stored.startsWith(PREFIX)) throw new SecretError('a stored secret has an unknown format (expected enc:v1:…)');
      const parts = stored.slice(PREFIX.length).split(':');
      if (parts.length !== 4) throw new SecretError('a stored secret is malformed (expected enc:v1:<kid>:<iv>:<tag>:<ciphertext>)');
      const [kid, iv, tag, ciphertext] = parts as [string, string, string, string];
      const key = byKid.get(kid);
      if (!key) {
        throw new SecretError(
          `a stored secret was sealed with key ${kid}, which ENCRYPTION_KEYS does not hold (it holds ${[...byKid.keys()].join(', ')}); add that key back`,
        );
      }
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(place, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretError(`a stored secret does not open with key ${kid}: the key differs from the one that sealed it, or the value was altered or moved`);
      }
    },

    isCurrent(stored) {
      return kidOf(stored) === active.kid;
    },
  };
}

/** Source settings of any dialect: the secret is `api_key` (entrata, the default) or `client_secret` (buildium). */
type AnySourceConfig = { dialect?: 'entrata'; api_key: string } | { dialect: 'buildium'; client_secret: string };

/** The field of a dialect's settings that holds its secret. */
function sourceSecretField(config: { dialect?: string }): 'api_key' | 'client_secret' {
  return config.dialect === 'buildium' ? 'client_secret' : 'api_key';
}

/** A source's settings with its secret (`api_key` or `client_secret`) sealed for the integration's row. */
export function sealSourceConfig<T extends AnySourceConfig>(ring: Keyring, integrationId: string, settings: T): T {
  const field = sourceSecretField(settings);
  const plain = (settings as Record<string, unknown>)[field] as string;
  return { ...settings, [field]: ring.seal(plain, places.sourceApiKey(integrationId)) };
}

/** A source's settings as the connector needs them, with its secret opened. Only activities and the API's write-options read call this. */
export function openSourceConfig<T extends AnySourceConfig>(ring: Keyring, integration: { id: string; sourceConfig: T }): T {
  const field = sourceSecretField(integration.sourceConfig);
  const sealed = (integration.sourceConfig as Record<string, unknown>)[field] as string;
  return { ...integration.sourceConfig, [field]: ring.open(sealed, places.sourceApiKey(integration.id)) };
}

export function sealSigningSecret(ring: Keyring, subscriptionId: string, secret: string): string {
  return ring.seal(secret, places.signingSecret(subscriptionId));
}

/** A subscription's current or previous signing secret, opened just before signing. */
export function openSigningSecret(ring: Keyring, subscriptionId: string, stored: string): string {
  return ring.open(stored, places.signingSecret(subscriptionId));
}

/** An HTTP destination's headers (name → value), sealed as one JSON object for the automation's row. */
export function sealAutomationHeaders(ring: Keyring, automationId: string, headers: Record<string, string>): string {
  return ring.seal(JSON.stringify(headers), places.automationHeaders(automationId));
}

/** An automation's destination headers, opened just before sending; none when it has none. Only activities call this. */
export function openAutomationHeaders(ring: Keyring, automation: { id: string; destinationHeaders: string | null }): Record<string, string> {
  if (automation.destinationHeaders === null) return {};
  const json = ring.open(automation.destinationHeaders, places.automationHeaders(automation.id));
  let headers: unknown;
  try {
    headers = JSON.parse(json);
  } catch {
    headers = undefined;
  }
  // The message never carries the value: it may hold a credential.
  if (!headers || typeof headers !== 'object' || Array.isArray(headers) || Object.values(headers).some((v) => typeof v !== 'string')) {
    throw new SecretError(`the destination headers of automation ${automation.id} are not a JSON object of strings`);
  }
  return headers as Record<string, string>;
}
