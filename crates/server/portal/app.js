// The portal: sign-in, the shell with its sections, and a hash router. Every datum comes
// from /api with the session key; sections show only when the user's grants allow them.
import { api, session, saveSession, whenSignedOut } from './api.js';
import { t, setLanguage, languages } from './i18n.js';
import { el, field, errorSlot, busy, heading } from './ui.js';
import * as dashboard from './views/dashboard.js';
import * as browse from './views/browse.js';
import * as files from './views/files.js';
import * as orders from './views/orders.js';
import * as offers from './views/offers.js';
import * as admin from './views/admin.js';

const root = document.getElementById('app');

/** Whether a grant list allows method on resource (grants are resource:METHODS). */
export function may(me, resource, method) {
  return me.grants.some((grant) => {
    const [res, methods] = grant.split(':');
    return (res === '*' || res === resource) && (methods === '*' || methods.split(',').includes(method));
  });
}

const SECTIONS = [
  { id: 'dashboard', view: dashboard, shown: () => true },
  { id: 'browse', view: browse, shown: (me) => me.grants.some((g) => /:(\*|.*GET)/.test(g)) },
  { id: 'files', view: files, shown: (me) => may(me, 'file', 'POST') && me.uploads.length > 0 },
  { id: 'orders', view: orders, shown: (me) => may(me, 'order', 'GET') },
  { id: 'offers', view: offers, shown: (me) => offers.offersFor(me, (r, m) => may(me, r, m)) },
  { id: 'admin', view: admin, shown: (me) => may(me, 'apiKey', 'GET') },
];

let me = null;
/** A message for the next sign-in page (after a password was set from an invitation). */
let notice = null;

const iconHref = () => document.querySelector('link[rel=icon]').getAttribute('href');

async function loadMe() {
  const who = await api('/session');
  let lang = 'en';
  let name = who.email;
  try {
    const user = (await api(`/user/${who.user}`)).response.user[0];
    lang = (user.detail && user.detail.lang) || 'en';
    name = user.name || who.email;
  } catch { /* the user's own record may be outside a narrow key's grants */ }
  // A language chosen in this browser by a user who may not write its own record.
  lang = localStorage.getItem(languageKey(who.email)) || lang;
  setLanguage(lang);
  // The file types this user's type may upload, as the API describes them.
  const uploads = (await files.fileTypes()).filter((ft) => ft.userTypes.includes(who.type)).map((ft) => ft.type);
  return { ...who, name, lang, uploads };
}

/** Where this browser keeps a user's chosen language when the user's record cannot hold it. */
const languageKey = (email) => `brandhub.language.${email}`;

/** The language switch: the choice is kept in the user's record (`detail.lang`, which the
 * API's answers follow too) where the user may write it, else in this browser. */
function languageSwitch() {
  const select = el('select', { id: 'language', 'aria-label': t('language') },
    languages().map(([code, name]) => el('option', { value: code, selected: code === me.lang, lang: code }, name)));
  select.addEventListener('change', async () => {
    const lang = select.value;
    try {
      await api(`/user/${me.user}`, { method: 'PATCH', json: { detail: { lang } } });
      localStorage.removeItem(languageKey(me.email));
    } catch {
      localStorage.setItem(languageKey(me.email), lang);
    }
    me.lang = lang;
    setLanguage(lang);
    await route();
  });
  return select;
}

function signInView(message) {
  const email = el('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = el('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const button = el('button', { type: 'submit' }, t('signIn'));
  const slot = errorSlot();
  const form = el('form', { class: 'signin card', novalidate: true },
    el('div', { class: 'brand-mark' }, el('img', { src: iconHref(), alt: '' }), t('appName')),
    el('h1', {}, t('signInTitle')),
    el('p', { class: 'muted' }, t('signInIntro')),
    message ? el('p', { class: 'notice', role: 'status' }, message) : null,
    field(t('email'), email), field(t('password'), password), slot, button);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      if (!email.value.trim() || !password.value) {
        throw { problem: { title: t('signInMissing') } };
      }
      let answer;
      try {
        answer = await api('/session', { method: 'POST', auth: false, json: { email: email.value.trim(), password: password.value } });
      } catch (error) {
        // A refused sign-in reads as one, whatever the API's words for its body.
        if (error.status === 400 || error.status === 422) throw { problem: { title: t('signInFailed'), detail: t('signInCheck') } };
        throw error;
      }
      saveSession({ email: answer.email, key: answer.key });
      me = null;
      location.hash = '#/dashboard';
      await route();
    });
  });
  root.replaceChildren(el('main', { class: 'signin-page' }, form));
  email.focus();
}

function invitationView(token) {
  const password = el('input', { type: 'password', autocomplete: 'new-password', required: true, minlength: '10' });
  const button = el('button', { type: 'submit' }, t('setPassword'));
  const slot = errorSlot();
  const form = el('form', { class: 'signin card' }, el('h1', {}, t('setPasswordTitle')), field(t('newPassword'), password), slot, button);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      await api(`/invitation/${encodeURIComponent(token)}`, { method: 'POST', auth: false, json: { password: password.value } });
      // The sign-in page the address change leads to shows the notice.
      notice = t('passwordSet');
      if (location.hash === '#/signin') route(); else location.hash = '#/signin';
    });
  });
  root.replaceChildren(el('main', { class: 'signin-page' }, form));
}

async function signOut() {
  try { await api('/session', { method: 'DELETE' }); } catch { /* ended already */ }
  saveSession(null);
  me = null;
  location.hash = '#/signin';
  signInView();
}

/** The skip link and the header of the signed-in pages, made for one user and language and
 * kept while they stay: another address then replaces only the page's content and marks
 * its section in the header, so the header is not made and laid out again each time. */
let frame = null;

function makeFrame() {
  const links = new Map(SECTIONS.filter((s) => s.shown(me)).map((s) => [s.id, el('a', { href: `#/${s.id}` }, t(s.id))]));
  const nav = el('nav', { 'aria-label': t('sections') }, [...links.values()]);
  const header = el('header', { class: 'topbar' },
    el('a', { class: 'brand-mark', href: '#/dashboard' }, el('img', { src: iconHref(), alt: '' }), t('appName')),
    nav,
    el('div', { class: 'who' }, el('span', { class: 'who-name', title: me.email }, `${me.name} · ${t(`val_type_${me.type}`)}`),
      languageSwitch(),
      el('button', { type: 'button', class: 'secondary', onclick: signOut }, t('signOut'))));
  const made = { me, lang: me.lang, links, header, main: null };
  // The skip link moves the focus to the page's content; the address (the route) stays.
  made.skip = el('a', { class: 'skip', href: '#main' }, t('skipToContent'));
  made.skip.addEventListener('click', (event) => {
    event.preventDefault();
    made.main.focus();
  });
  return made;
}

function shell(active) {
  if (!frame || frame.me !== me || frame.lang !== me.lang || !frame.header.isConnected) frame = makeFrame();
  for (const [id, link] of frame.links) {
    link.className = id === active ? 'active' : '';
    if (id === active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // A link of the frame that led here lets go of the focus, as it would if the frame were
  // made again: the page's heading takes it (route).
  const focused = document.activeElement;
  if (focused === frame.skip || frame.header.contains(focused)) focused.blur();
  const main = el('main', { id: 'main', tabindex: '-1' });
  if (frame.main && frame.main.parentNode === root) frame.main.replaceWith(main);
  else root.replaceChildren(frame.skip, frame.header, main);
  frame.main = main;
  return main;
}

/** Which call of route() is the latest: an earlier one still waiting (for the user's
 * record) draws nothing over the page a later address asked for. */
let routing = 0;

async function route() {
  const mine = ++routing;
  const hash = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = hash.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'invitation' && parts[1]) return invitationView(parts[1]);
  if (!session()) {
    const message = notice;
    notice = null;
    return signInView(message);
  }
  if (!me) {
    try { me = await loadMe(); } catch (error) { saveSession(null); return signInView(error.message); }
  }
  if (mine !== routing) return;
  const section = SECTIONS.find((s) => s.id === (parts[0] || 'dashboard') && s.shown(me));
  if (!section) {
    const main = shell('');
    main.append(heading(t('notFound')));
    return;
  }
  const main = shell(section.id);
  main.append(el('p', { class: 'muted' }, t('loading')));
  try {
    await section.view.render(main, { me, parts: parts.slice(1), query: new URLSearchParams(query), may: (r, m) => may(me, r, m) });
  } catch (error) {
    const { problemBox } = await import('./ui.js');
    main.replaceChildren(problemBox(error));
  }
  const h1 = main.querySelector('h1');
  if (h1 && document.activeElement === document.body) h1.focus({ preventScroll: true });
}

whenSignedOut(() => { me = null; signInView(); });
window.addEventListener('hashchange', route);
route();
