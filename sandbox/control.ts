/**
 * The contract of the sandbox PMS's control endpoints (used by the admin API for sandbox integrations, and by
 * tests and demos), and its client over HTTP.
 */
import { config } from '../config';
import type { Entity } from '../domain/cdm';

type PerEntity<T> = Partial<Record<Entity, T>>;

export interface SandboxChangeRequest {
  /** Records to change: a total spread over entities, or counts per entity. */
  update?: number | PerEntity<number>;
  create?: number | PerEntity<number>;
  delete?: number | PerEntity<number>;
  /** Leases whose status moves along a realistic transition (pending→active, active→notice→ended, ...). */
  lease_transitions?: number;
  /**
   * Records to make unreadable (a value no mapping accepts, as real systems sometimes hold): a total spread over
   * entities, or counts per entity. A later `update` of such a record leaves it malformed.
   */
  corrupt?: number | PerEntity<number>;
}

export interface SandboxChangeResult {
  updated: Record<Entity, string[]>;
  created: Record<Entity, string[]>;
  deleted: Record<Entity, string[]>;
  /** Records made malformed by `corrupt`. */
  corrupted: Record<Entity, string[]>;
  lease_transitions: { x_id: string; from: string; to: string }[];
  /** Renewal leases created by transitions (also listed in `created.lease`), with the lease each renews. */
  renewals: { x_id: string; previous_x_id: string }[];
}

type SandboxFaultKind = 'unavailable' | 'rate_limited' | 'slow' | 'reject_writes';
/** Which requests a fault affects: every request, the read methods only, or the write methods only. */
type SandboxFaultScope = 'all' | 'reads' | 'writes';

interface SandboxFault {
  kind: SandboxFaultKind;
  /** How many requests the fault affects (only requests in its scope count); omitted = until cleared. */
  count?: number;
  /**
   * Reply delay of a `slow` fault (default: the sandbox's SANDBOX_SLOW_MS); ignored by other kinds. A slow read
   * waits before it is served; a slow write is applied first and answered after the delay.
   */
  delay_ms?: number;
  /** Default `all`. `reject_writes` affects writes only, whatever its scope (`reads` is refused). */
  methods?: SandboxFaultScope;
}

/** The wire a sandbox company is served in: the Entrata-style RPC API or the Buildium-style REST API. */
export type SandboxDialect = 'entrata' | 'buildium';

/** What a client of the company authenticates with. */
export interface SandboxCredentials {
  /** The entrata flavour's `X-Api-Key`; for a buildium company, the same value as `client_secret`. */
  api_key: string;
  dialect: SandboxDialect;
  /** The buildium flavour's `x-buildium-client-id` (the company id); buildium companies only. */
  client_id?: string;
  /** The buildium flavour's `x-buildium-client-secret`; buildium companies only. */
  client_secret?: string;
}

interface SandboxCompanyInfo {
  company_id: string;
  dialect: SandboxDialect;
  size: number;
  seed: number;
  change_counter: number;
  counts: Record<Entity, number>;
}

export interface SandboxControl {
  /**
   * Provision a company (one per integration) with generated data, in one flavour (default entrata); returns the
   * credentials its connector uses. Creating an existing company again returns its credentials, whatever is asked.
   */
  createCompany(input: {
    companyId: string;
    size: number;
    seed: number;
    dialect?: SandboxDialect;
    rate_limit_per_second?: number;
  }): Promise<SandboxCredentials>;
  deleteCompany(companyId: string): Promise<void>;
  applyChanges(companyId: string, req: SandboxChangeRequest): Promise<SandboxChangeResult>;
  /** Set a fault (see SandboxFault); a fault of the same kind is replaced, scope and count included. */
  setFault(companyId: string, fault: SandboxFault): Promise<void>;
  clearFaults(companyId: string): Promise<void>;
  /** Size, seed, change counter and record counts of a company; undefined when it does not exist. */
  getCompany(companyId: string): Promise<SandboxCompanyInfo | undefined>;
}

/**
 * A control call the sandbox refused. `status` 404: no such company; 422: invalid input (message says why);
 * 401: wrong control token.
 */
export class SandboxControlError extends Error {
  override name = 'SandboxControlError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Client of the sandbox's /control API. The token defaults to the configuration's SANDBOX_CONTROL_TOKEN. */
export function sandboxControlClient(baseUrl: string, controlToken?: string): SandboxControl {
  const base = baseUrl.replace(/\/$/, '');
  const token = controlToken ?? config().SANDBOX_CONTROL_TOKEN;

  async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; data: T | undefined }> {
    const res = await fetch(`${base}/control${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      // Generating a 250k-lease company takes a while.
      signal: AbortSignal.timeout(10 * 60_000),
    });
    const text = await res.text();
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : undefined;
    } catch {
      data = undefined;
    }
    if (!res.ok) {
      const err = (data as { error?: { code?: string; message?: string } } | undefined)?.error;
      throw new SandboxControlError(`sandbox ${method} ${path}: ${err?.message ?? `HTTP ${res.status}`}`, res.status, err?.code ?? 'error');
    }
    return { status: res.status, data: data as T };
  }
  const enc = encodeURIComponent;

  return {
    async createCompany(input) {
      return (await call<SandboxCredentials>('POST', '/companies', input)).data!;
    },
    async deleteCompany(companyId) {
      await call('DELETE', `/companies/${enc(companyId)}`);
    },
    async applyChanges(companyId, req) {
      return (await call<SandboxChangeResult>('POST', `/companies/${enc(companyId)}/changes`, req)).data!;
    },
    async setFault(companyId, fault) {
      await call('POST', `/companies/${enc(companyId)}/faults`, fault);
    },
    async clearFaults(companyId) {
      await call('DELETE', `/companies/${enc(companyId)}/faults`);
    },
    async getCompany(companyId) {
      try {
        return (await call<SandboxCompanyInfo>('GET', `/companies/${enc(companyId)}`)).data;
      } catch (err) {
        if (err instanceof SandboxControlError && err.status === 404) return undefined;
        throw err;
      }
    },
  };
}
