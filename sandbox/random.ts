/** A small seeded PRNG (sfc32 seeded through splitmix32): the sandbox's data must be a pure function of its seed. */

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** Mix a seed with a stream label and counters, so that independent streams (generation, change #n) never overlap. */
export function streamSeed(seed: number, ...parts: (string | number)[]): number {
  let h = (Math.floor(seed) ^ Math.floor(seed / 2 ** 32)) >>> 0;
  for (const p of parts) {
    for (const ch of String(p)) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    h = Math.imul(h ^ 0x2f, 0x5bd1e995) >>> 0;
  }
  return h;
}

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const next = splitmix32(seed);
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }
  /** [0, 1) */
  next(): number {
    return this.u32() / 4294967296;
  }
  /** Integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  /** Pick by weight: [[value, weight], ...]. */
  weighted<T>(options: readonly (readonly [T, number])[]): T {
    const total = options.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [v, w] of options) {
      r -= w;
      if (r < 0) return v;
    }
    return options[options.length - 1]![0];
  }
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    return items;
  }
  /** `n` distinct elements in a random order (all of them when fewer). */
  sample<T>(items: readonly T[], n: number): T[] {
    if (n >= items.length) return this.shuffle([...items]);
    const picked = new Set<number>();
    const out: T[] = [];
    while (out.length < n) {
      const i = Math.floor(this.next() * items.length);
      if (!picked.has(i)) {
        picked.add(i);
        out.push(items[i]!);
      }
    }
    return out;
  }
}

/**
 * Draws values from a shuffled deck of the given proportions, reshuffled when empty: proportions hold exactly over
 * each deck, so every value appears as soon as a deck's worth has been drawn.
 */
export class Deck<T> {
  private cards: T[] = [];
  constructor(
    private readonly rng: Rng,
    private readonly counts: readonly (readonly [T, number])[],
  ) {}
  draw(): T {
    if (this.cards.length === 0) {
      for (const [v, n] of this.counts) for (let i = 0; i < n; i++) this.cards.push(v);
      this.rng.shuffle(this.cards);
    }
    return this.cards.pop()!;
  }
}
