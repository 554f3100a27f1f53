/**
 * The operator CLI against admin APIs that misbehave, each a small node:http server of this file: one that accepts a
 * request and never answers, or stalls its body after the headers; one that redirects; one whose proxy answers 502
 * for a while during a `--wait`. And what the CLI takes from the environment (only the API's address and token),
 * and how it refuses a flag's value that starts with "-". The CLI runs as an operator runs it, a child process.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEV_ADMIN_TOKEN } from '../../config';
import { runCli, type CliRun } from '../support/cli';

const TOKEN = 'a-test-admin-token-of-ours';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

interface Api {
  url: string;
  port: number;
  /** Every request it got, in order. */
  seen: Seen[];
}

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** A server on a port of its own that answers with `handle` (its request's body already read), and what it got. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void): Promise<Api> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const s = { method: req.method!, url: req.url!, authorization: req.headers.authorization, body };
      seen.push(s);
      handle(req, res, s);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, seen };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** What a reverse proxy in front of a stopped API answers. */
const badGateway = (res: ServerResponse) => {
  res.writeHead(502, { 'content-type': 'text/html' });
  res.end('<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>\n');
};

/** The CLI against `api` (its address and a token in the environment), and how long it took. */
async function cli(api: Api, args: string[], env: Record<string, string> = {}): Promise<CliRun & { ms: number }> {
  const startedAt = Date.now();
  const r = await runCli({ url: api.url, token: TOKEN }, args, env);
  return { ...r, ms: Date.now() - startedAt };
}

/** The lines of stderr. */
const lines = (r: CliRun) => r.stderr.trimEnd().split('\n');

const job = (status: string) => ({
  id: 'syj_1',
  status,
  records_seen: 0,
  records_new: 0,
  records_updated: 0,
  records_soft_deleted: 0,
  records_skipped: 0,
  error: null,
});

describe('a request the admin API does not answer', () => {
  it('ends at --request-timeout, whether no answer comes or its body stalls after the headers', async () => {
    const hanging = await serve(() => undefined);
    const stalling = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data": [');
    });
    const [hung, stalled, posted] = await Promise.all([
      cli(hanging, ['org', 'list', '--request-timeout', '1']),
      cli(stalling, ['org', 'list', '--request-timeout', '1']),
      cli(hanging, ['sync', 'run', 'int_1', '--request-timeout', '1']),
    ]);
    expect(hung).toMatchObject({ code: 1, stdout: '', stderr: `error: the admin API at ${hanging.url} did not answer within 1 s\n` });
    expect(stalled).toMatchObject({ code: 1, stdout: '', stderr: `error: the admin API at ${stalling.url} did not answer within 1 s\n` });
    // A change it sent may have been applied: the operator is told to look before sending it again.
    expect(posted).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `error: the admin API at ${hanging.url} did not answer within 1 s; the POST may have been applied: look before sending it again\n`,
    });
    // undici's own limits are 300 s; the CLI's start takes a few seconds on a loaded machine.
    expect(hung.ms).toBeLessThan(15_000);
    expect(stalled.ms).toBeLessThan(15_000);
    expect(hanging.seen.map((s) => s.method).sort()).toEqual(['GET', 'POST']);
  });

  it('ends a --wait at its --timeout when a poll gets no answer, and says the run goes on', async () => {
    const api = await serve((req, res) => {
      if (req.method === 'POST') return json(res, 202, job('queued'));
      // Every poll hangs.
    });
    const r = await cli(api, ['sync', 'run', 'int_1', '--wait', '--timeout', '2', '--poll-ms', '100']);
    expect(r.code, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual(job('queued'));
    expect(lines(r).at(-1)).toMatch(
      new RegExp(`^error: the admin API at ${api.url} did not answer within [\\d.]+ s; stopped waiting: sync job syj_1 goes on \\(see: sync get syj_1\\)$`),
    );
    expect(r.ms).toBeGreaterThanOrEqual(2_000);
    expect(r.ms).toBeLessThan(15_000);
    expect(api.seen.map((s) => s.method)).toEqual(['POST', 'GET']);
  });

  it('says so in one line when the connection is cut in the middle of the answer', async () => {
    const cut = await serve((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"data": [');
      setTimeout(() => req.socket.destroy(), 50);
    });
    const r = await cli(cut, ['org', 'list']);
    expect(r).toMatchObject({ code: 1, stdout: '', stderr: `error: the admin API at ${cut.url} broke off its answer: UND_ERR_SOCKET\n` });
  });

  it('says it cannot reach an API that refuses the connection, and refuses a --request-timeout under a second or past a timer', async () => {
    const closed = await serve(() => undefined);
    const server = servers.pop()!;
    await new Promise((r) => server.close(r));
    const [refused, refusedPost, zero, huge] = await Promise.all([
      cli(closed, ['org', 'list']),
      cli(closed, ['sync', 'run', 'int_1']),
      cli(closed, ['org', 'list', '--request-timeout', '0']),
      cli(closed, ['org', 'list', '--request-timeout', '2147484']),
    ]);
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: `error: cannot reach the admin API at ${closed.url}: ECONNREFUSED\n` });
    // Never sent, so never applied: no warning.
    expect(refusedPost).toMatchObject({ code: 1, stdout: '', stderr: `error: cannot reach the admin API at ${closed.url}: ECONNREFUSED\n` });
    expect(zero).toMatchObject({ code: 2, stdout: '', stderr: 'error: --request-timeout must be from 1 to 2147483 seconds, got 0\n' });
    expect(huge).toMatchObject({ code: 2, stdout: '', stderr: 'error: --request-timeout must be from 1 to 2147483 seconds, got 2147484\n' });
  });

  it('is a global flag, shown in the top-level help', async () => {
    const help = await cli(await serve(() => undefined), ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}--request-timeout <seconds> +Give up on a request .*\(default 30; exit 1\)$/m);
  });
});

describe('a redirect', () => {
  it('to another origin is not followed (the token would be dropped): the CLI names the address to use', async () => {
    const moved = await serve((_req, res) => json(res, 200, { data: [] }));
    const old = await serve((req, res) => {
      res.writeHead(301, { location: `${moved.url}${req.url}` });
      res.end();
    });
    const r = await cli(old, ['org', 'list']);
    expect(r).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `error: the admin API at ${old.url} redirects to ${moved.url}; set --url or PUBLIC_BASE_URL to that address\n`,
    });
    expect(moved.seen).toEqual([]);
  });

  it('on the same origin is not followed either (a POST would turn into a GET)', async () => {
    const api = await serve((req, res) => {
      if (req.url!.startsWith('/v2/')) return json(res, 200, { data: [] });
      res.writeHead(302, { location: `/v2${req.url}` });
      res.end();
    });
    const r = await cli(api, ['org', 'create', '--name', 'Acme']);
    expect(r).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `error: the admin API at ${api.url} redirects to ${api.url}/v2; set --url or PUBLIC_BASE_URL to that address\n`,
    });
    expect(api.seen.map((s) => `${s.method} ${s.url}`)).toEqual(['POST /admin/v1/organizations']);
  });
});

describe('a --wait whose polls fail for a while', () => {
  it('keeps polling through 502s until the sync job ends, one stderr line per failed poll', async () => {
    let polls = 0;
    const api = await serve((req, res) => {
      if (req.method === 'POST') return json(res, 202, job('queued'));
      polls += 1;
      if (polls <= 3) return badGateway(res);
      json(res, 200, job(polls === 4 ? 'running' : 'succeeded'));
    });
    const r = await cli(api, ['sync', 'run', 'int_1', '--wait', '--poll-ms', '100']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(job('succeeded'));
    const failed = lines(r).filter((l) => l.startsWith('warning: '));
    expect(failed).toHaveLength(3);
    for (const line of failed) {
      expect(line).toBe(
        `warning: reading sync job syj_1 failed: GET ${api.url}/admin/v1/sync_jobs/syj_1 answered 502 with a body that is not JSON: <html> <body> <h1>502 Bad Gateway</h1> </body> </html>; trying again in 0.1 s`,
      );
    }
    expect(r.stderr).not.toContain('error:');
    expect(polls).toBe(5);
  });

  it('keeps polling an Operation through 503s, and an automation run through dropped connections', async () => {
    let opPolls = 0;
    const op = (status: string) => ({ id: 'opr_1', status, reconcile: { state: 'pending', attempts: 0, next_attempt_at: null, last_error: null } });
    const operations = await serve((_req, res) => {
      opPolls += 1;
      // The command's own first read, then two polls refused, then the end.
      if (opPolls === 1) return json(res, 200, op('running'));
      if (opPolls <= 3) return json(res, 503, { title: 'Service Unavailable', status: 503, detail: 'Temporal is unreachable.' });
      json(res, 200, op('succeeded'));
    });
    let runPolls = 0;
    const run = (status: string) => ({ id: 'aru_1', status, attempts: 1, next_attempt_at: null, error: null, records_exported: null });
    const automations = await serve((req, res) => {
      if (req.method === 'POST') return json(res, 202, run('queued'));
      runPolls += 1;
      if (runPolls <= 2) return req.socket.destroy();
      json(res, 200, run('succeeded'));
    });
    const [o, a] = await Promise.all([
      cli(operations, ['operations', 'get', 'opr_1', '--wait', '--timeout', '30']),
      cli(automations, ['automation', 'run', 'aut_1', '--wait', '--poll-ms', '100']),
    ]);
    expect(o.code, o.stderr).toBe(0);
    expect(JSON.parse(o.stdout)).toEqual(op('succeeded'));
    expect(lines(o)).toEqual([
      'warning: reading operation opr_1 failed: 503 Service Unavailable: Temporal is unreachable.; trying again in 1 s',
      'warning: reading operation opr_1 failed: 503 Service Unavailable: Temporal is unreachable.; trying again in 1 s',
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toEqual(run('succeeded'));
    expect(lines(a)).toEqual([
      `warning: reading automation run aru_1 failed: the admin API at ${automations.url} closed the connection without answering; trying again in 0.1 s`,
      `warning: reading automation run aru_1 failed: the admin API at ${automations.url} closed the connection without answering; trying again in 0.1 s`,
    ]);
  });

  it('stops at --timeout when the polls keep failing: the last failure, and that the run goes on', async () => {
    const api = await serve((req, res) => (req.method === 'POST' ? json(res, 202, job('queued')) : badGateway(res)));
    const r = await cli(api, ['sync', 'run', 'int_1', '--wait', '--timeout', '2', '--poll-ms', '200']);
    expect(r.code, r.stderr).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual(job('queued'));
    const said = lines(r);
    expect(said.filter((l) => l.startsWith('warning: reading sync job syj_1 failed: ')).length).toBeGreaterThanOrEqual(3);
    expect(said.filter((l) => l.startsWith('error: '))).toEqual([
      `error: GET ${api.url}/admin/v1/sync_jobs/syj_1 answered 502 with a body that is not JSON: <html> <body> <h1>502 Bad Gateway</h1> </body> </html>; stopped waiting: sync job syj_1 goes on (see: sync get syj_1)`,
    ]);
    expect(said.at(-1)).toMatch(/^error: /);
    expect(r.ms).toBeLessThan(15_000);
  });

  it('ends at once on a failure that will not pass (a 404)', async () => {
    const api = await serve((req, res) =>
      req.method === 'POST' ? json(res, 202, job('queued')) : json(res, 404, { title: 'Not Found', status: 404, detail: 'No sync job syj_1.' }),
    );
    const r = await cli(api, ['sync', 'run', 'int_1', '--wait', '--timeout', '30', '--poll-ms', '100']);
    expect(r.code).toBe(1);
    expect(lines(r).filter((l) => !l.startsWith('sync syj_1 '))).toEqual(['error: 404 Not Found: No sync job syj_1.']);
    expect(api.seen).toHaveLength(2);
  });
});

describe('the environment', () => {
  it('is read for the API address and token only: an unrelated bad variable is ignored', async () => {
    const api = await serve((_req, res) => json(res, 200, { data: [] }));
    const r = await cli(api, ['org', 'list'], { LOG_LEVEL: 'warning', PORT: 'not-a-port-but-unused', DATABASE_URL: 'nope' });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(r.stdout)).toEqual({ data: [] });
    expect(api.seen[0]!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('defaults as the service does: http://HOST:PORT without PUBLIC_BASE_URL, the development token without ADMIN_TOKEN', async () => {
    const api = await serve((_req, res) => json(res, 200, { data: [] }));
    const r = await cli(api, ['org', 'list'], { PUBLIC_BASE_URL: '', ADMIN_TOKEN: '', HOST: '127.0.0.1', PORT: String(api.port) });
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(api.seen.map((s) => [s.url, s.authorization])).toEqual([['/admin/v1/organizations', `Bearer ${DEV_ADMIN_TOKEN}`]]);
  });

  it('refuses a bad value of a variable it reads in one line, exit 2, unless a flag stands in for it', async () => {
    const api = await serve((_req, res) => json(res, 200, { data: [] }));
    const [port, url, token, flags] = await Promise.all([
      cli(api, ['org', 'list'], { PUBLIC_BASE_URL: '', PORT: 'abc' }),
      cli(api, ['org', 'list'], { PUBLIC_BASE_URL: 'not a url' }),
      cli(api, ['org', 'list'], { ADMIN_TOKEN: 'short' }),
      cli(api, ['org', 'list', '--url', api.url, '--token', TOKEN], { PUBLIC_BASE_URL: 'not a url', ADMIN_TOKEN: 'short' }),
    ]);
    expect(port).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^error: PORT: [^\n]+\n$/) });
    expect(url).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^error: PUBLIC_BASE_URL: [^\n]+\n$/) });
    expect(token).toMatchObject({ code: 2, stdout: '', stderr: 'error: ADMIN_TOKEN: must be at least 16 characters\n' });
    expect(flags).toMatchObject({ code: 0, stderr: '' });
    expect(api.seen).toHaveLength(1);
  });
});

describe('a flag value that starts with "-"', () => {
  it('is refused when given apart, with how to give it; given as --name=-Acme it is sent', async () => {
    const api = await serve((_req, res) => json(res, 201, { id: 'org_1', name: '-Acme' }));
    const [apart, joined] = await Promise.all([cli(api, ['org', 'create', '--name', '-Acme']), cli(api, ['org', 'create', '--name=-Acme'])]);
    expect(apart).toMatchObject({
      code: 2,
      stdout: '',
      stderr: `error: Option '--name' argument is ambiguous (did you forget its value?); to give a value that starts with "-", write --name=-Acme; see org create --help\n`,
    });
    expect(joined).toMatchObject({ code: 0, stderr: '' });
    expect(api.seen.map((s) => JSON.parse(s.body))).toEqual([{ name: '-Acme' }]);
  });

  it('is not repeated when it is the token (a secret on the terminal or in a CI log)', async () => {
    const r = await cli(await serve(() => undefined), ['org', 'list', '--token', '-Zx-secret-token-value']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("write '--token=<token>';");
    expect(r.stderr).not.toContain('secret-token-value');
  });

  it('is shown quoted for a shell when it needs to be', async () => {
    const r = await cli(await serve(() => undefined), ['org', 'create', '--name', "-Acme's Co"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`write '--name=-Acme'\\''s Co'; see org create --help`);
  });
});
