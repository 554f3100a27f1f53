/** `key`: aPI keys of the public API. */
import { required, defined, id, type Noun } from '../command';

export const key: Noun = {
  summary: 'API keys of the public API',
  verbs: {
    create: {
      summary: 'Create a key; its secret is printed this once',
      args: [],
      flags: {
        org: { type: 'string', value: '<org_id>', description: 'Organization (required)' },
        mode: { type: 'string', value: '<test|live>', description: 'Mode (required)' },
        scopes: { type: 'string', value: '<read,write>', description: 'Comma-separated scopes (default read,write)' },
      },
      run: async ({ client, flags }) => {
        const scopes =
          typeof flags.scopes === 'string'
            ? flags.scopes
                .split(',')
                .map((s) => s.trim())
                .filter(Boolean)
            : undefined;
        const body = defined({ mode: required('mode', flags.mode), scopes });
        return { output: await client.request('POST', `/organizations/${id(required('org', flags.org))}/api_keys`, body) };
      },
    },
    revoke: {
      summary: 'Revoke a key (at once, everywhere; idempotent)',
      args: ['key_id'],
      flags: {},
      run: async ({ client, args }) => ({ output: await client.request('POST', `/api_keys/${id(args[0]!)}/revoke`) }),
    },
  },
};
