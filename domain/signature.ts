/**
 * Webhook signatures: `X-Service-Signature` is the lowercase hex HMAC-SHA256 of the raw body, keyed with the
 * subscription's secret exactly as shown (`whsec_` included, UTF-8). During a rotation window the delivery also
 * carries `X-Service-Signature-Previous`, made with the previous secret.
 *
 * A subscription that signs the Standard Webhooks way (https://www.standardwebhooks.com) also gets `webhook-id` (the
 * event id), `webhook-timestamp` (the attempt's time, in seconds) and `webhook-signature`: `v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, one per secret during a rotation window, separated by spaces. Its key is the secret's
 * decoded bytes (what follows `whsec_`, base64), as the specification says, so the published libraries verify it.
 *
 * `verifyWebhookSignature` is what a receiver runs before anything else: hash the bytes as received (never
 * re-serialized JSON), compare in constant time, accept either header against any of its secrets.
 * `verifyStandardWebhook` does the same for the Standard Webhooks headers, and refuses a timestamp outside the
 * tolerance (a replayed request).
 *
 * Impure on purpose (domain/README.md): node:crypto for the HMAC, new secrets and the constant-time compare; never
 * imported by workflows.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';
export const PREVIOUS_SIGNATURE_HEADER = 'x-service-signature-previous';
export const EVENT_ID_HEADER = 'x-service-event-id';
export const EVENT_TYPE_HEADER = 'x-service-event-type';
export const ATTEMPT_HEADER = 'x-service-delivery-attempt';
export const STANDARD_ID_HEADER = 'webhook-id';
export const STANDARD_TIMESTAMP_HEADER = 'webhook-timestamp';
export const STANDARD_SIGNATURE_HEADER = 'webhook-signature';

/** Random bytes of a new signing secret (the specification allows 24 to 64). */
const SECRET_BYTES = 32;
const SECRET_PREFIX = 'whsec_';

/** A new signing secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/**
 * The Standard Webhooks key of a secret: the bytes its base64 part decodes to. Secrets made before this form
 * (`whsec_` and 32 base62 characters) decode too, to 24 bytes, as every published library decodes them.
 */
export function standardSigningKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** One `v1,<base64>` signature of `id.timestamp.body` under a key from standardSigningKey. */
export function standardSignature(key: Uint8Array, id: string, timestampSeconds: number, body: string | Uint8Array): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.`);
  return `v1,${mac.update(body).digest('base64')}`;
}

export function signPayload(body: string | Uint8Array, secret: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const bag = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(bag).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : bag[key];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * True when either signature header matches the raw body under any of `secrets` (the current secret, and during a
 * rotation the previous one too). Constant time in the signature's content.
 */
export function verifyWebhookSignature(rawBody: string | Uint8Array, headers: HeaderBag, secrets: string | readonly string[]): boolean {
  const keys = typeof secrets === 'string' ? [secrets] : secrets;
  const given = [header(headers, SIGNATURE_HEADER), header(headers, PREVIOUS_SIGNATURE_HEADER)]
    .filter((s): s is string => typeof s === 'string' && /^[0-9a-f]{64}$/.test(s))
    .map((s) => Buffer.from(s, 'hex'));
  let ok = false;
  for (const secret of keys) {
    const expected = Buffer.from(signPayload(rawBody, secret), 'hex');
    // No early exit: every pair is compared, so timing does not tell which one matched.
    for (const g of given) ok = timingSafeEqual(g, expected) || ok;
  }
  return ok;
}

/**
 * True when `webhook-signature` carries a v1 signature of `webhook-id.webhook-timestamp.body` under any of `secrets`
 * and `webhook-timestamp` is within `toleranceSeconds` (default 5 minutes) of `now`: a request replayed later fails.
 */
export function verifyStandardWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secrets: string | readonly string[],
  opts: { toleranceSeconds?: number; now?: Date } = {},
): boolean {
  const id = header(headers, STANDARD_ID_HEADER);
  const ts = header(headers, STANDARD_TIMESTAMP_HEADER);
  const sigs = header(headers, STANDARD_SIGNATURE_HEADER);
  if (!id || !ts || !sigs || !/^\d{1,12}$/.test(ts)) return false;
  const nowSeconds = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - Number(ts)) > (opts.toleranceSeconds ?? 300)) return false;
  const given = sigs
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'))
    .filter((b) => b.length === 32);
  let ok = false;
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const expected = Buffer.from(standardSignature(standardSigningKey(secret), id, Number(ts), rawBody).slice(3), 'base64');
    for (const g of given) ok = timingSafeEqual(g, expected) || ok;
  }
  return ok;
}
