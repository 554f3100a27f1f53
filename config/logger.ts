/**
 * Structured logging (pino). JSON lines in production; pretty, prefixed lines with LOG_PRETTY=true.
 *
 * Every line is redacted before it is written, at any depth: values under a sensitive key (api_key, secret, token,
 * authorization, cookie, password, ENCRYPTION_KEYS, any key ending in secret or token) become "[redacted]", and
 * anything in the finished line that looks like a credential (an `sk_test_`/`sk_live_` API key, a `whsec_` signing
 * secret, a sandbox `sbx_` key, a bearer token, the password of a URL) is masked wherever it appears, messages and
 * error stacks included. Objects deeper than MAX_DEPTH are cut rather than written unredacted.
 */
import pino, { type Logger } from 'pino';

export type { Logger };

export const REDACTED = '[redacted]';
const MAX_DEPTH = 8;
const MAX_ARRAY = 200;

/** Keys whose values are secret, compared lower-cased with `_` and `-` removed. */
const SENSITIVE_KEYS = new Set([
  'apikey',
  'xapikey',
  'secret',
  'previoussecret',
  'password',
  'passwd',
  'token',
  'authorization',
  'proxyauthorization',
  'cookie',
  'setcookie',
  'encryptionkeys',
  'privatekey',
]);

export function isSensitiveKey(key: string): boolean {
  const k = key.toLowerCase().replace(/[_-]/g, '');
  return SENSITIVE_KEYS.has(k) || k.endsWith('secret') || k.endsWith('token');
}

/** Credentials recognisable by their shape, masked wherever they appear in a written line. */
const PATTERNS: [RegExp, string][] = [
  [/\bsk_(?:test|live)_[A-Za-z0-9]{8,}/g, REDACTED],
  [/\bwhsec_[A-Za-z0-9+/]{8,}={0,2}/g, REDACTED],
  [/\bsbx_[A-Za-z0-9_-]{8,}/g, REDACTED],
  [/\b(Bearer\s+)[^\s"'\\,;]+/gi, `$1${REDACTED}`],
  // user:password@ in a URL (a DATABASE_URL in an error message).
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"'\\]+:)[^\s@/"'\\]+@/gi, `$1${REDACTED}@`],
];

export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/**
 * A copy of a log object with the values of sensitive keys replaced, at any depth up to MAX_DEPTH (deeper: cut),
 * with cycles cut and errors turned into plain objects (type, message, stack, their own fields) so that theirs are
 * walked too. Strings are left to `redactText`, which sees the whole line.
 */
export function redactLogObject(obj: Record<string, unknown>): Record<string, unknown> {
  return walk(obj, 0, new WeakSet()) as Record<string, unknown>;
}

function walk(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return walk(pino.stdSerializers.err(value), depth, seen);
  if (Buffer.isBuffer(value) || value instanceof Date) return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      const items = value.slice(0, MAX_ARRAY).map((v) => walk(v, depth + 1, seen));
      if (value.length > MAX_ARRAY) items.push(`[${value.length - MAX_ARRAY} more]`);
      return items;
    }
    const json = (value as { toJSON?: unknown }).toJSON;
    if (typeof json === 'function') return walk(json.call(value), depth, seen);
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[key];
      out[key] = isSensitiveKey(key) && v !== null && v !== undefined ? REDACTED : walk(v, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

export function createLogger(name: string, opts: { level?: string; pretty?: boolean } = {}): Logger {
  const logger = pino({
    name,
    level: opts.level ?? 'info',
    formatters: { log: redactLogObject },
    // Errors are serialized (and redacted) by redactLogObject; pino's own serializer would re-type them `Object`.
    serializers: { err: (err: unknown) => err },
    hooks: { streamWrite: redactText },
    ...(opts.pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname', messageFormat: '[{name}] {msg}' } } } : {}),
  });
  // pino writes a child's bindings without the log formatter: redact them when the child is made (children of
  // children inherit this method).
  const childOf = logger.child;
  logger.child = function (this: Logger, bindings: Record<string, unknown>, options?: unknown) {
    return childOf.call(this, redactLogObject(bindings), options as never);
  } as Logger['child'];
  return logger;
}
