/**
 * The alert rules and the Prometheus configuration of deploy/prometheus, as Prometheus reads them: `promtool check`
 * on both, and `promtool test rules` with series under which a healthy system fires nothing, a broken one fires every
 * alert, and thresholds hold at their edges (deploy/prometheus/alerts.test.yml). promtool comes from Debian's
 * prometheus package, unpacked into .tools by the ensure step.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROMTOOL } from '../../scripts/tools';

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url));
const run = promisify(execFile);

async function promtool(...args: string[]): Promise<string> {
  const { stdout, stderr } = await run(PROMTOOL, args, { cwd: DIR }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`promtool ${args.join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? err.message}`);
  });
  return stdout + stderr;
}

describe('deploy/prometheus', () => {
  it('has valid rules and a valid configuration', async () => {
    expect(await promtool('check', 'rules', 'alerts.yml')).toMatch(/SUCCESS: 9 rules found/);
    expect(await promtool('check', 'config', 'prometheus.yml')).toMatch(/is valid prometheus config file syntax/);
  });

  it('fires each alert under series that should, and none under series that should not', async () => {
    expect(await promtool('test', 'rules', 'alerts.test.yml')).toMatch(/SUCCESS/);
    // Every alert of the rules is tested both ways.
    const rules = (parse(readFileSync(`${DIR}alerts.yml`, 'utf8')) as { groups: { rules: { alert: string }[] }[] }).groups.flatMap((g) =>
      g.rules.map((r) => r.alert),
    );
    const tests = (
      parse(readFileSync(`${DIR}alerts.test.yml`, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }
    ).tests.flatMap((t) => t.alert_rule_test);
    for (const alert of rules) {
      expect(
        tests.some((t) => t.alertname === alert && t.exp_alerts.length > 0),
        `${alert} fires somewhere`,
      ).toBe(true);
      expect(
        tests.some((t) => t.alertname === alert && t.exp_alerts.length === 0),
        `${alert} stays quiet somewhere`,
      ).toBe(true);
    }
  });
});
