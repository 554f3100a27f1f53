/** domain/plans.ts's PLAN_RULES inside statements written as text. */
import { PLAN_RULES, type PlanRules } from '../domain/plans';

type NumberRule = { [K in keyof PlanRules]: PlanRules[K] extends number ? K : never }[keyof PlanRules];

/** A SQL `case` giving the number `rule` of the plan of the integration aliased `i`, e.g. its rate limit per minute. */
export const planRuleCase = (rule: NumberRule): string =>
  `case i.plan ${Object.entries(PLAN_RULES)
    .map(([plan, r]) => `when '${plan}' then ${r[rule]}`)
    .join(' ')} end`;
