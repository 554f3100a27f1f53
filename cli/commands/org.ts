/** `org`: organizations (tenants). */
import { intOrNull, required, defined, page, pageQuery, id, usageError, type Noun } from '../command';

export const org: Noun = {
  summary: 'Organizations (tenants)',
  verbs: {
    list: {
      summary: 'List organizations (ids and names: what `key create --org` needs after a restart)',
      args: [],
      flags: page,
      run: async ({ client, flags }) => ({ output: await client.request('GET', `/organizations${pageQuery(flags)}`) }),
    },
    create: {
      summary: 'Create an organization',
      args: [],
      flags: { name: { type: 'string', value: '<name>', description: 'Its name (required)' } },
      run: async ({ client, flags }) => ({ output: await client.request('POST', '/organizations', { name: required('name', flags.name) }) }),
    },
    get: {
      summary: 'Show an organization',
      args: ['org_id'],
      flags: {},
      run: async ({ client, args }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}`) }),
    },
    update: {
      summary: 'Rename, or override the org-wide rate limit',
      args: ['org_id'],
      flags: {
        name: { type: 'string', value: '<name>', description: 'New name' },
        'rate-limit': { type: 'string', value: '<n|null>', description: 'Requests per minute; null = the plan limit' },
        burst: { type: 'string', value: '<n|null>', description: 'Burst size; null = 10 % of the per-minute budget' },
      },
      run: async ({ client, args, flags }) => {
        const body = defined({
          name: flags.name,
          rate_limit_per_minute: intOrNull('rate-limit', flags['rate-limit']),
          rate_limit_burst: intOrNull('burst', flags.burst),
        });
        if (Object.keys(body).length === 0) throw usageError('nothing to update: give --name, --rate-limit or --burst');
        return { output: await client.request('PATCH', `/organizations/${id(args[0]!)}`, body) };
      },
    },
    integrations: {
      summary: "List an organization's integrations",
      args: ['org_id'],
      flags: page,
      run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}/integrations${pageQuery(flags)}`) }),
    },
    keys: {
      summary: "List an organization's API keys (without secrets)",
      args: ['org_id'],
      flags: page,
      run: async ({ client, args, flags }) => ({ output: await client.request('GET', `/organizations/${id(args[0]!)}/api_keys${pageQuery(flags)}`) }),
    },
  },
};
