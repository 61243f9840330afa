// Small DOM helpers: elements, error messages next to what caused them, busy buttons.
import { t, language } from './i18n.js';

/** Creates an element: el('button', {class: 'x', onclick}, 'text', child…). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else if (name === 'text') node.textContent = value;
    else if (value === true) node.setAttribute(name, '');
    else node.setAttribute(name, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A labelled form control. */
export function field(label, control, hint) {
  const id = control.id || (control.id = 'f' + Math.random().toString(36).slice(2, 9));
  return el('div', { class: 'field' }, el('label', { for: id }, label), control, hint ? el('small', { class: 'hint' }, hint) : null);
}

/** What the server says in its own words (a problem's detail, a field's message): the API
 * answers in the page's language (its Accept-Language), so the words are shown as they
 * come, marked as that language. */
export function serverWords(node) {
  node.setAttribute('lang', language());
  return node;
}

/** Whether an error is the server's answer (a problem it sent), not the portal's own. */
export const fromServer = (error) => Boolean(error && error.status > 0);

/** An error box for an API error, naming the fields it blames. Its title is in the page's
 * language (the server's problems follow the page's Accept-Language). */
export function problemBox(error) {
  const problem = error.problem || { detail: String(error.message || error) };
  const said = (node) => (fromServer(error) ? serverWords(node) : node);
  const box = el('div', { class: 'problem', role: 'alert' },
    el('strong', {}, problem.title || t('failed')),
    problem.detail ? said(el('p', {}, problem.detail)) : null);
  if (problem.errors && problem.errors.length) {
    box.append(said(el('ul', {}, problem.errors.map((e) => el('li', {}, `${e.field}: ${e.message}`)))));
  }
  return box;
}

/** A place for an error right next to the control that caused it. */
export function errorSlot() {
  const slot = el('div', { class: 'error-slot', 'aria-live': 'polite' });
  slot.show = (error) => { slot.replaceChildren(problemBox(error)); };
  slot.clear = () => slot.replaceChildren();
  return slot;
}

/** Runs an action with the button disabled; errors go to the slot. */
export async function busy(button, slot, action) {
  button.disabled = true;
  slot?.clear();
  try { return await action(); } catch (error) { if (slot) slot.show(error); else throw error; } finally { button.disabled = false; }
}

export function copyButton(text) {
  const button = el('button', { type: 'button', class: 'secondary' }, t('copy'));
  button.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(text); button.textContent = t('copied'); } catch { button.textContent = t('copy'); }
  });
  return button;
}

export function heading(text) {
  return el('h1', { tabindex: '-1' }, text);
}

export function badge(status) {
  return el('span', { class: `badge badge-${String(status).replace(/[^a-zA-Z]/g, '')}` }, status);
}
