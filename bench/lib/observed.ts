/**
 * What the benches' observability comparison shares: the span sink (bench/lib/span-sink.ts, a process of its own)
 * and reading a Prometheus endpoint's samples, so that a bench can check that metrics and tracing were on (and
 * counted what happened) while it measured them on, and off while off.
 */
import { startChild, type Child } from './processes';

export interface SinkStats {
  exports: number;
  spans: Record<string, number>;
  unparsed: number;
}

export interface SpanSink {
  /** The OTLP endpoint to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  child: Child;
  stats(): Promise<SinkStats>;
  /** Spans of `name` received so far. */
  count(name: string): Promise<number>;
  stop(): Promise<void>;
}

export async function startSpanSink(): Promise<SpanSink> {
  const child = startChild('bench/lib/span-sink.ts', [], {}, '[span sink]');
  const url = `http://127.0.0.1:${(await child.line(/span sink listening on (\d+)/))[1]}`;
  const stats = async (): Promise<SinkStats> => {
    const res = await fetch(`${url}/_stats`);
    if (!res.ok) throw new Error(`span sink: ${res.status}`);
    return (await res.json()) as SinkStats;
  };
  return { url, child, stats, count: async (name) => (await stats()).spans[name] ?? 0, stop: () => child.stop() };
}

/**
 * The value of one sample of a Prometheus exposition (`name` and exactly these label values, in any order), 0 when
 * the series is absent.
 */
export function sampleOf(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = (m[2] ?? '').match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? [];
    if ([...got].sort().join(',') === want) return Number(m[3]);
  }
  return 0;
}
