/** Organizations: the tenants. Their rate limit override is read by the API's org-wide limiter. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import { createOrganization, organizationsPage, updateOrganization, type OrganizationRow } from '../../db/tenants';
import type { ApiDeps } from '../deps';
import { Organization, OrganizationCreate, OrganizationUpdate } from './organizations.schemas';
import { listRoute, patchRoute, postRoute, retrieveRoute } from './routes';
import { json, linkTo, listOf, OrganizationId } from './schemas';
import { listPage, loadOrganization } from './support';

function organizationView(row: OrganizationRow) {
  return {
    id: row.id,
    name: row.name,
    rate_limit_per_minute: row.rateLimitPerMinute,
    rate_limit_burst: row.rateLimitBurst,
    created_at: row.createdAt.toISOString(),
  };
}

const tags = ['Organizations'];

export function registerOrganizations(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    postRoute({
      path: '/organizations',
      tags,
      summary: 'Create an organization',
      body: OrganizationCreate,
      responses: { 201: json(Organization, 'The organization.', linkTo('GetOrganization', 'getOrganization', 'The organization created.')) },
    }),
    async (c) => {
      const row = await createOrganization(deps.db, { name: c.req.valid('json').name });
      return c.json(organizationView(row), 201);
    },
  );

  app.openapi(
    listRoute({
      path: '/organizations',
      tags,
      summary: 'List organizations',
      description: 'Every organization of the deployment, oldest first by default (`order=desc`: newest first).',
      list: listOf(Organization, 'OrganizationList'),
      order: 'asc',
      links: linkTo('GetOrganization', 'getOrganization', 'The first organization of the page.', '/results/0/id'),
    }),
    async (c) => {
      return c.json(await listPage(c.req.valid('query'), (page) => organizationsPage(deps.db, page), organizationView), 200);
    },
  );

  app.openapi(
    retrieveRoute({
      path: '/organizations/{id}',
      operationId: 'getOrganization',
      tags,
      summary: 'Retrieve an organization',
      params: OrganizationId,
      ok: json(Organization, 'The organization.'),
    }),
    async (c) => c.json(organizationView(await loadOrganization(deps, c.req.valid('param').id)), 200),
  );

  app.openapi(
    patchRoute({
      path: '/organizations/{id}',
      tags,
      summary: 'Update an organization (name, rate limit override)',
      description: 'A `null` rate limit clears the override, so the plan limit applies again.',
      params: OrganizationId,
      body: OrganizationUpdate,
      responses: { 200: json(Organization, 'The organization.') },
    }),
    async (c) => {
      const org = await loadOrganization(deps, c.req.valid('param').id);
      const input = c.req.valid('json');
      const set = {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.rate_limit_per_minute !== undefined ? { rateLimitPerMinute: input.rate_limit_per_minute } : {}),
        ...(input.rate_limit_burst !== undefined ? { rateLimitBurst: input.rate_limit_burst } : {}),
      };
      if (Object.keys(set).length === 0) return c.json(organizationView(org), 200);
      const row = await updateOrganization(deps.db, org.id, set);
      return c.json(organizationView(row!), 200);
    },
  );
}
