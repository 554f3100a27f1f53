/** Structured logging (pino). JSON lines in production; pretty, prefixed lines with LOG_PRETTY=true. */
import pino, { type Logger } from 'pino';

export type { Logger };

export function createLogger(name: string, opts: { level?: string; pretty?: boolean } = {}): Logger {
  return pino({
    name,
    level: opts.level ?? 'info',
    redact: { paths: ['*.api_key', '*.authorization', '*.secret', 'req.headers.authorization'], censor: '[redacted]' },
    ...(opts.pretty
      ? { transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,hostname', messageFormat: '[{name}] {msg}' } } }
      : {}),
  });
}
