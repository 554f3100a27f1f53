/** Explicit states: a whitelist of transitions per status, and the guard every status write applies. Pure. */

/** The states from which `to` may be reached, by the whitelist `transitions` (status → where it may go). */
export function statesLeadingTo<S extends string>(transitions: Record<S, readonly S[]>, to: S): S[] {
  return (Object.keys(transitions) as S[]).filter((from) => transitions[from].includes(to));
}
