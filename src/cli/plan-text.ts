import type { Plan } from '../mesh/types.js';

/** Placeholder until the text renderer lands: JSON is the contract. */
export function renderPlanText(plan: Plan): string {
  return `${JSON.stringify(plan, null, 2)}\n`;
}
