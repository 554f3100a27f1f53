/** `key`: aPI keys of the public API. */
import { defined, id, callVerb, type Noun } from '../command';
import { required, commaList, orgAndMode, option } from '../flags';

export const key: Noun = {
  summary: 'API keys of the public API',
  verbs: {
    create: {
      summary: 'Create a key; its secret is printed this once',
      args: [],
      flags: {
        ...orgAndMode,
        scopes: option('<read,write>', 'Comma-separated scopes (default read,write)'),
      },
      run: async ({ client, flags }) => {
        const scopes = typeof flags.scopes === 'string' ? commaList(flags.scopes) : undefined;
        const body = defined({ mode: required('mode', flags.mode), scopes });
        return { output: await client.request('POST', `/organizations/${id(required('org', flags.org))}/api_keys`, body) };
      },
    },
    revoke: callVerb('Revoke a key (at once, everywhere; idempotent)', 'POST /api_keys/{key_id}/revoke'),
  },
};
