/** API keys of an organization: created with the secret shown once, listed and revoked without it. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import { apiKeysPage, createApiKey, revokeApiKey, type ApiKeyRow } from '../../db/tenants';
import type { ApiDeps } from '../deps';
import { ApiKey, ApiKeyCreate, ApiKeyCreated } from './api-keys.schemas';
import { listRoute, postRoute } from './routes';
import { IdParam, json, listOf, OrganizationId } from './schemas';
import { found, listChildren, loadOrganization, uuidOr404 } from './support';

function apiKeyView(row: ApiKeyRow) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    mode: row.mode,
    scopes: row.scopes as ('read' | 'write')[],
    key_prefix: row.keyPrefix,
    created_at: row.createdAt.toISOString(),
    revoked_at: row.revokedAt?.toISOString() ?? null,
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
  };
}

const tags = ['API keys'];

export function registerApiKeys(app: OpenAPIHono, deps: ApiDeps): void {
  app.openapi(
    postRoute({
      path: '/organizations/{id}/api_keys',
      tags,
      summary: 'Create an API key',
      description: 'The response is the only time the secret `key` is shown; only its hash is stored. Scopes default to read and write.',
      params: OrganizationId,
      body: ApiKeyCreate,
      responses: { 201: json(ApiKeyCreated, 'The key, with its secret.') },
    }),
    async (c) => {
      const org = await loadOrganization(deps, c.req.valid('param').id);
      const input = c.req.valid('json');
      const scopes = input.scopes ? [...new Set(input.scopes)] : undefined;
      const { row, key } = await createApiKey(deps.db, { organizationId: org.id, mode: input.mode, scopes });
      return c.json({ ...apiKeyView(row), key }, 201);
    },
  );

  app.openapi(
    listRoute({
      path: '/organizations/{id}/api_keys',
      tags,
      summary: "List an organization's API keys (without secrets)",
      params: OrganizationId,
      list: listOf(ApiKey, 'ApiKeyList'),
      order: 'asc',
      note: '; revoked keys included',
    }),
    listChildren(deps, loadOrganization, apiKeysPage, apiKeyView),
  );

  app.openapi(
    postRoute({
      path: '/api_keys/{id}/revoke',
      tags,
      summary: 'Revoke an API key',
      description: 'Takes effect at once in every API process. Idempotent: revoking again returns the key with its first `revoked_at`.',
      params: IdParam('7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6', 'API key id (UUID).'),
      responses: { 200: json(ApiKey, 'The revoked key.') },
    }),
    async (c) => {
      const id = c.req.valid('param').id;
      const row = found(await revokeApiKey(deps.db, uuidOr404(id, 'API key')), 'API key', id);
      return c.json(apiKeyView(row), 200);
    },
  );
}
