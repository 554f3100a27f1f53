/** `org`: organizations (tenants). */
import { defined, callVerb, listVerb, sendVerb, type Noun } from '../command';
import { intOrNull, required, option } from '../flags';

export const org: Noun = {
  summary: 'Organizations (tenants)',
  verbs: {
    list: listVerb('List organizations (ids and names: what `key create --org` needs after a restart)', '/organizations'),
    create: sendVerb('POST /organizations', {
      summary: 'Create an organization',
      flags: { name: option('<name>', 'Its name (required)') },
      body: (flags) => ({ name: required('name', flags.name) }),
    }),
    get: callVerb('Show an organization', 'GET /organizations/{org_id}'),
    update: sendVerb('PATCH /organizations/{org_id}', {
      summary: 'Rename, or override the org-wide rate limit',
      flags: {
        name: option('<name>', 'New name'),
        'rate-limit': option('<n|null>', 'Requests per minute; null = the plan limit'),
        burst: option('<n|null>', 'Burst size; null = 10 % of the per-minute budget'),
      },
      body: (flags) =>
        defined({
          name: flags.name,
          rate_limit_per_minute: intOrNull('rate-limit', flags['rate-limit']),
          rate_limit_burst: intOrNull('burst', flags.burst),
        }),
      nothing: 'nothing to update: give --name, --rate-limit or --burst',
      fields: { rate_limit_per_minute: '--rate-limit', rate_limit_burst: '--burst' },
    }),
    integrations: listVerb("List an organization's integrations", '/organizations/{org_id}/integrations'),
    keys: listVerb("List an organization's API keys (without secrets)", '/organizations/{org_id}/api_keys'),
  },
};
