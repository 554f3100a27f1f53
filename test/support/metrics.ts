/** Reading a Prometheus endpoint in tests: the exposition text parsed into samples, and look-ups by name and labels. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  text: string;
  samples: Sample[];
  /** The value of the one sample of `name` with exactly these labels among others (0 when there is none). */
  value(name: string, labels?: Record<string, string>): number;
  /** Every sample of `name` whose labels include these. */
  all(name: string, labels?: Record<string, string>): Sample[];
  /** Metric families declared (`# TYPE name type`). */
  types: Map<string, string>;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  const matches = (s: Sample, labels: Record<string, string>) => Object.entries(labels).every(([k, v]) => s.labels[k] === v);
  return {
    text,
    samples,
    types,
    all: (name, labels = {}) => samples.filter((s) => s.name === name && matches(s, labels)),
    value(name, labels = {}) {
      const hits = samples.filter((s) => s.name === name && matches(s, labels));
      if (hits.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} samples`);
      return hits[0]?.value ?? 0;
    },
  };
}

export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return parseExposition(await res.text());
}
