/** Prefixed identifiers. Pure: generation lives in db/ids.ts so workflows never pull in randomness. */
export const ID_PREFIX = {
  property: 'prp_',
  unit: 'unt_',
  resident: 'res_',
  lease: 'lse_',
  operation: 'opr_',
  event: 'evt_',
  request: 'req_',
  syncJob: 'syj_',
  automation: 'atm_',
  automationRun: 'aru_',
  webhookSubscription: 'whs_',
  webhookDelivery: 'whd_',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const patterns = Object.fromEntries(Object.entries(ID_PREFIX).map(([k, p]) => [k, new RegExp(`^${p}${ULID}$`)])) as Record<IdKind, RegExp>;

/** The pattern of an id of one kind, as an OpenAPI document states it. */
export function idPattern(kind: IdKind): string {
  return patterns[kind].source;
}

export function isId(kind: IdKind, value: string): boolean {
  return patterns[kind].test(value);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
