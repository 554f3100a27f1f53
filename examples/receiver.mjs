// A webhook receiver that runs as written: `WEBHOOK_SECRET=whsec_… node examples/receiver.mjs` (Node 20+, no
// packages). It verifies X-Service-Signature (HMAC-SHA256 of the raw body, keyed with the secret exactly as shown,
// prefix included) in constant time before anything else, answers 401 on a mismatch, and 200 at once otherwise;
// then it prints the event. A real receiver would queue the event for processing and dedupe on its `id`.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.WEBHOOK_SECRET;
// Not PORT: that is the API's own port, often set in the same shell.
const port = Number(process.env.RECEIVER_PORT ?? 4000);
if (!secret) {
  console.error("set WEBHOOK_SECRET to the subscription's signing secret (whsec_…)");
  process.exit(2);
}

/** Whether `signature` (lowercase hex) is the HMAC of `body` with `key`, compared in constant time. */
function signedWith(key, body, signature) {
  const expected = createHmac('sha256', key).update(body).digest();
  const given = Buffer.from(signature ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks); // the bytes as received: never re-serialized JSON
    const ok = signedWith(secret, body, req.headers['x-service-signature']) || signedWith(secret, body, req.headers['x-service-signature-previous']);
    if (!ok) {
      res.writeHead(401).end();
      console.log('refused a request with a bad signature');
      return;
    }
    res.writeHead(200).end();
    const event = JSON.parse(body.toString('utf8'));
    console.log(`${event.type} ${event.id} ${JSON.stringify(event.data).slice(0, 160)}`);
  });
}).listen(port, '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}/hooks`));
