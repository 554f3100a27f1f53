/**
 * Webhook signatures: `X-Service-Signature` is the lowercase hex HMAC-SHA256 of the raw body, keyed with the
 * subscription's secret exactly as shown (`whsec_` included, UTF-8). During a rotation window the delivery also
 * carries `X-Service-Signature-Previous`, made with the previous secret.
 *
 * `verifyWebhookSignature` is what a receiver runs before anything else: hash the bytes as received (never
 * re-serialized JSON), compare in constant time, accept either header against any of its secrets.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-service-signature';
export const PREVIOUS_SIGNATURE_HEADER = 'x-service-signature-previous';
export const EVENT_ID_HEADER = 'x-service-event-id';
export const EVENT_TYPE_HEADER = 'x-service-event-type';
export const ATTEMPT_HEADER = 'x-service-delivery-attempt';

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
