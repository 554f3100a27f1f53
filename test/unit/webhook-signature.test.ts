/** What a receiver relies on: the signature is HMAC-SHA256 of the raw bytes with the secret as shown, either header verifies. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { newSigningSecret, signPayload, standardSignature, standardSigningKey, verifyStandardWebhook, verifyWebhookSignature } from '../../domain/signature';

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

describe('Standard Webhooks signatures', () => {
  // The specification's example (standard-webhooks/spec, "Signature scheme"), as the reference libraries test it.
  const specSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const specId = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const specTs = 1614265330;
  const specBody = '{"test": 2432232314}';

  it('matches the specification example and the published library', () => {
    const sig = standardSignature(standardSigningKey(specSecret), specId, specTs, specBody);
    expect(sig).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    const headers = { 'webhook-id': specId, 'webhook-timestamp': String(specTs), 'webhook-signature': sig };
    expect(verifyStandardWebhook(specBody, headers, specSecret, { now: new Date(specTs * 1000) })).toBe(true);
    // The library checks against the current time: sign now, verify with it.
    const now = Math.floor(Date.now() / 1000);
    const fresh = {
      'webhook-id': specId,
      'webhook-timestamp': String(now),
      'webhook-signature': standardSignature(standardSigningKey(specSecret), specId, now, specBody),
    };
    expect(() => new Webhook(specSecret).verify(specBody, fresh)).not.toThrow();
  });

  it('makes new secrets in the specification form, whose decoded bytes are the key', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(standardSigningKey(secret)).toHaveLength(32);
    // Secrets made before (whsec_ and 32 base62 characters) decode too, as the libraries decode them.
    expect(standardSigningKey(secret.slice(0, 6) + 'a'.repeat(32))).toHaveLength(24);
    expect(newSigningSecret()).not.toBe(secret);
  });

  it('refuses a timestamp outside the tolerance, another secret, and a signature of other bytes', () => {
    const now = new Date();
    const ts = Math.floor(now.getTime() / 1000);
    const headers = {
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': standardSignature(standardSigningKey(secret), 'evt_1', ts, body),
    };
    expect(verifyStandardWebhook(body, headers, [specSecret, secret], { now })).toBe(true);
    expect(verifyStandardWebhook(body, headers, secret, { now: new Date(now.getTime() + 301_000) })).toBe(false);
    expect(verifyStandardWebhook(body, headers, specSecret, { now })).toBe(false);
    expect(verifyStandardWebhook(`${body} `, headers, secret, { now })).toBe(false);
    expect(verifyStandardWebhook(body, { ...headers, 'webhook-id': 'evt_2' }, secret, { now })).toBe(false);
  });
});
