/**
 * The export bench's HTTP destination, a process of its own: `node --import tsx bench/lib/export-destination.ts`.
 * Listens on a free port of 127.0.0.1 (printed as `destination listening <port>`) and takes any number of PUT or
 * POST requests. Each body is consumed as it arrives, never held: a CSV scanner counts its bytes and its records
 * (RFC 4180: a CR or LF inside a quoted value is part of the value, a doubled quote is a quote), checks every record
 * has as many fields as the header, and digests the first field of every data row (md5 over `<value>\n`, in order),
 * so the bench can tell that a body holds exactly the rows it expects, in its order. It also digests the whole body
 * after its byte order mark (two bodies with the same digest are the same bytes) and keeps its first 64 KiB, whose
 * records the bench reads back against the API.
 * After the body ends it answers 200 and prints one line `received <json>` (Received); an aborted body is printed
 * with `complete: false`. Times are epoch ms with sub-ms precision (performance.timeOrigin + performance.now()).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  method: string;
  contentType: string | null;
  complete: boolean;
  bytes: number;
  /** Records, the header included. */
  records: number;
  /** Fields of the header (the first record). */
  headerFields: number;
  /** Records whose field count differs from the header's. */
  ragged: number;
  /** A UTF-8 byte order mark opened the body. */
  bom: boolean;
  /** md5 hex over the first field of each data row, each followed by `\n`. */
  firstFieldDigest: string;
  /** md5 hex of the body after its byte order mark. */
  bodyDigest: string;
  /** The first HEAD_BYTES of the body after its byte order mark, base64. */
  head: string;
  /** Epoch ms: the request's headers arrived, its first body byte, its last. */
  arrivedAt: number;
  firstByteAt: number | null;
  lastByteAt: number | null;
}

const now = () => performance.timeOrigin + performance.now();
const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const HEAD_BYTES = 64 * 1024;

/** Counts CSV records of a stream of chunks without keeping them. */
class CsvScanner {
  records = 0;
  headerFields = 0;
  ragged = 0;
  bom = false;
  private started = false;
  private inQuotes = false;
  private field = 0;
  /** Bytes seen in the current record (a last record without a line break still counts). */
  private pending = false;
  private readonly digest = createHash('md5');

  push(chunk: Buffer): void {
    let i = 0;
    if (!this.started) {
      this.started = true;
      // A BOM split over chunks does not happen in practice: both writers send it with the header.
      if (chunk.length >= 3 && chunk.subarray(0, 3).equals(BOM)) {
        this.bom = true;
        i = 3;
      }
    }
    // Where the first field of a data row began in this chunk (-1: not in the first field of a data row).
    let keyStart = this.field === 0 && this.records > 0 ? i : -1;
    const n = chunk.length;
    for (; i < n; i++) {
      const c = chunk[i]!;
      if (this.inQuotes) {
        if (c === QUOTE) this.inQuotes = false;
        continue;
      }
      if (c === QUOTE) {
        this.inQuotes = true;
        this.pending = true;
      } else if (c === COMMA) {
        if (keyStart >= 0) {
          this.digest.update(chunk.subarray(keyStart, i));
          this.digest.update('\n');
          keyStart = -1;
        }
        this.field++;
        this.pending = true;
      } else if (c === LF) {
        if (keyStart >= 0) {
          this.digest.update(chunk.subarray(keyStart, i > keyStart && chunk[i - 1] === CR ? i - 1 : i));
          this.digest.update('\n');
        }
        this.endRecord();
        keyStart = this.records > 0 ? i + 1 : -1;
      } else if (c !== CR) {
        this.pending = true;
      }
    }
    if (keyStart >= 0 && keyStart < n) this.digest.update(chunk.subarray(keyStart, n));
  }

  private endRecord(): void {
    const fields = this.field + 1;
    if (this.records === 0) this.headerFields = fields;
    else if (fields !== this.headerFields) this.ragged++;
    this.records++;
    this.field = 0;
    this.pending = false;
  }

  end(): string {
    if (this.pending) {
      this.digest.update('\n');
      this.endRecord();
    }
    return this.digest.digest('hex');
  }
}

const server = http.createServer((req, res) => {
  const arrivedAt = now();
  const scanner = new CsvScanner();
  let bytes = 0;
  let firstByteAt: number | null = null;
  let lastByteAt: number | null = null;
  let done = false;
  const body = createHash('md5');
  const head: Buffer[] = [];
  let headBytes = 0;
  let started = false;
  const report = (complete: boolean) => {
    if (done) return;
    done = true;
    const firstFieldDigest = scanner.end();
    const r: Received = {
      path: req.url ?? '',
      method: req.method ?? '',
      contentType: req.headers['content-type'] ?? null,
      complete,
      bytes,
      records: scanner.records,
      headerFields: scanner.headerFields,
      ragged: scanner.ragged,
      bom: scanner.bom,
      firstFieldDigest,
      bodyDigest: body.digest('hex'),
      head: Buffer.concat(head).subarray(0, HEAD_BYTES).toString('base64'),
      arrivedAt,
      firstByteAt,
      lastByteAt,
    };
    console.log(`received ${JSON.stringify(r)}`);
  };
  req.on('data', (chunk: Buffer) => {
    const t = now();
    if (firstByteAt === null) firstByteAt = t;
    lastByteAt = t;
    bytes += chunk.length;
    scanner.push(chunk);
    let rest = chunk;
    if (!started) {
      started = true;
      if (rest.length >= 3 && rest.subarray(0, 3).equals(BOM)) rest = rest.subarray(3);
    }
    body.update(rest);
    if (headBytes < HEAD_BYTES) {
      head.push(Buffer.from(rest.subarray(0, HEAD_BYTES - headBytes)));
      headBytes += Math.min(rest.length, HEAD_BYTES - headBytes);
    }
  });
  req.once('end', () => {
    report(true);
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
  req.once('aborted', () => report(false));
  req.once('error', () => report(false));
});
server.keepAliveTimeout = 1_000;
server.listen(0, '127.0.0.1', () => console.log(`destination listening ${(server.address() as AddressInfo).port}`));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
