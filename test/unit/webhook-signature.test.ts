/** What a receiver relies on: the signature is HMAC-SHA256 of the raw bytes with the secret as shown, either header verifies. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signPayload, verifyWebhookSignature } from '../../domain/signature';

const body = '{"id":"evt_01J8Z5Q3M3W6X9K0V7B2C4D6E8","type":"LEASE_SIGNED","data":{"rent_amount":{"amount":150000,"currency":"USD"}}}';
const secret = 'whsec_0123456789abcdefABCDEF0123456789';

describe('signPayload / verifyWebhookSignature', () => {
  it('signs the raw bytes with the secret, whsec_ prefix included, as lowercase hex', () => {
    expect(signPayload(body, secret)).toBe(createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex'));
    expect(signPayload(body, secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(signPayload(Buffer.from(body), secret)).toBe(signPayload(body, secret));
  });

  it('accepts the signature under either header, from a plain object or a Headers, and any of the secrets', () => {
    const sig = signPayload(body, secret);
    expect(verifyWebhookSignature(body, { 'X-Service-Signature': sig }, secret)).toBe(true);
    expect(verifyWebhookSignature(Buffer.from(body), new Headers({ 'x-service-signature': sig }), [secret])).toBe(true);
    expect(verifyWebhookSignature(body, { 'x-service-signature': 'f'.repeat(64), 'x-service-signature-previous': sig }, secret)).toBe(true);
    expect(verifyWebhookSignature(body, { 'x-service-signature': sig }, ['whsec_other', secret])).toBe(true);
  });

  it('refuses re-serialized JSON, another secret, a missing or malformed header', () => {
    const sig = signPayload(body, secret);
    expect(verifyWebhookSignature(JSON.stringify(JSON.parse(body), null, 1), { 'x-service-signature': sig }, secret)).toBe(false);
    expect(verifyWebhookSignature(body, { 'x-service-signature': sig }, 'whsec_other')).toBe(false);
    expect(verifyWebhookSignature(body, {}, secret)).toBe(false);
    expect(verifyWebhookSignature(body, { 'x-service-signature': sig.toUpperCase() }, secret)).toBe(false);
    expect(verifyWebhookSignature(body, { 'x-service-signature': sig.slice(2) }, secret)).toBe(false);
    expect(verifyWebhookSignature(body, { 'x-service-signature': sig }, [])).toBe(false);
  });
});
