/** Types of the Hono context shared by middleware and routes. */
import type { Scope } from '../../db/tenants';
import type { Mode } from '../../domain/plans';

/** The caller behind a valid API key. */
export interface Principal {
  keyId: string;
  organizationId: string;
  mode: Mode;
  scopes: Scope[];
}

export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
  };
}
