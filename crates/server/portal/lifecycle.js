// The order lifecycle as the API describes it (x-brandhub-lifecycle of the Order schema in
// /api/openapi.json, derived from the server's one table): statuses and their words in each
// language, and the steps each user type may take from each status. The portal offers steps from this only.
import { schema } from './api.js';
import { language } from './i18n.js';

let cached;

/** The lifecycle of orders: {status, lines, statuses, lineStatuses, reasons, steps, actions}. */
export async function orderLifecycle() {
  if (!cached) {
    const doc = await schema();
    cached = doc.components.schemas.Order['x-brandhub-lifecycle'];
  }
  return cached;
}

/** A code's word in the user's language, as the description words it; else the code. */
function worded(list, code) {
  const entry = (list || []).find((s) => s.code === code);
  if (!entry) return String(code ?? '');
  return (entry.words && entry.words[language()]) || entry.word;
}

export const statusWord = (lc, code) => worded(lc.statuses, code);
export const lineStatusWord = (lc, code) => worded(lc.lineStatuses, code);
export const reasonWord = (lc, code) => worded(lc.reasons.codes, code);

/** The steps a user of `type` may take on an order in `status`, in the table's order. */
export function stepsFor(lc, type, status) {
  return lc.steps.filter((s) => s.from.includes(status) && s.who.includes(type));
}

/** The step of this name (acknowledgement, dispatch, delivery, return, cancellation). */
export function step(lc, name) {
  return lc.steps.find((s) => s.step === name);
}

/** The statuses from which an order can still be dispatched: those a chain of steps leads
 * from to `dispatched` (new, accepted, partDispatched). A late order is in one of them. */
export function notYetDispatched(lc) {
  const target = 'dispatched';
  const open = new Set();
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of lc.steps) {
      if (!s.to.includes(target) && !s.to.some((to) => open.has(to))) continue;
      for (const from of s.from) {
        if (from !== target && !open.has(from)) { open.add(from); grew = true; }
      }
    }
  }
  return lc.statuses.map((s) => s.code).filter((code) => open.has(code));
}
