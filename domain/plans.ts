/** Plans (docs/decisions.md): cadence, webhooks and the organization-wide API rate limit. */
export const PLANS = ['starter', 'growth', 'scale', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
export const MODES = ['test', 'live'] as const;
export type Mode = (typeof MODES)[number];

export interface PlanRules {
  defaultSyncIntervalSeconds: number;
  fastestSyncIntervalSeconds: number;
  webhooks: boolean;
  rateLimitPerMinute: number;
}

export const PLAN_RULES: Record<Plan, PlanRules> = {
  starter: { defaultSyncIntervalSeconds: 4 * 3600, fastestSyncIntervalSeconds: 4 * 3600, webhooks: false, rateLimitPerMinute: 120 },
  growth: { defaultSyncIntervalSeconds: 3600, fastestSyncIntervalSeconds: 3600, webhooks: false, rateLimitPerMinute: 300 },
  scale: { defaultSyncIntervalSeconds: 3600, fastestSyncIntervalSeconds: 1800, webhooks: true, rateLimitPerMinute: 600 },
  enterprise: { defaultSyncIntervalSeconds: 900, fastestSyncIntervalSeconds: 300, webhooks: true, rateLimitPerMinute: 1200 },
};

/** Burst allowance when an organization sets none: this share of the minute's budget (at least 1 request). */
export const DEFAULT_BURST_FRACTION = 0.1;

/** The effective interval: the override when set, else the plan's default. */
export function effectiveSyncInterval(plan: Plan, overrideSeconds: number | null | undefined): number {
  return overrideSeconds ?? PLAN_RULES[plan].defaultSyncIntervalSeconds;
}
