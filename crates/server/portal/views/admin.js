// Admin: the user's own API keys (create with grants, the secret shown once with a copy
// button, revoke); for admins and sponsors, users (create, invite, disable).
import { api, records } from '../api.js';
import { t, has, dateTime } from '../i18n.js';
import { renderCreate, renderEdit, setupCard, resourceWord } from './setup.js';
import { el, field, heading, errorSlot, busy, copyButton, badge } from '../ui.js';

export async function render(main, { me, may, parts: path }) {
  // #/admin/new/<resource> and #/admin/edit/<resource>/<id>: the forms that set up customers.
  if (path[0] === 'new' && path[1] && may(path[1], 'POST')) return renderCreate(main, path[1]);
  if (path[0] === 'edit' && path[1] && path[2] && may(path[1], 'PATCH')) return renderEdit(main, path[1], path[2]);
  const keys = el('section', { class: 'card' });
  await drawKeys(keys, me);
  const parts = [heading(t('admin'))];
  const setup = await setupCard(may);
  if (setup) parts.push(setup);
  parts.push(keys);
  if ((me.type === 'admin' || me.type === 'sponsor') && may('user', 'GET')) {
    const users = el('section', { class: 'card' });
    await drawUsers(users, me, may);
    parts.push(users);
  }
  main.replaceChildren(...parts);
}

async function drawKeys(section, me) {
  const list = records(await api(`/apiKey?fk_user=${me.user}&order_by=createdDate<&pageSize=100`), 'apiKey');
  const name = el('input', { type: 'text', value: 'Portal key' });
  const grants = el('input', { type: 'text', placeholder: me.grants.join(' ') });
  const button = el('button', { type: 'submit' }, t('createKey'));
  const slot = errorSlot();
  const secret = el('div', { 'aria-live': 'polite' });
  const form = el('form', { class: 'row' }, field(t('keyName'), name), field(t('grants'), grants, t('grantsHint')), el('div', { class: 'field end' }, button));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      const body = { name: name.value };
      const wanted = grants.value.split(/\s+/).filter(Boolean);
      if (wanted.length) body.grants = wanted;
      const created = (await api('/apiKey', { method: 'POST', json: body })).response.apiKey[0];
      await drawKeys(section, me);
      section.querySelector('.secret-slot').replaceChildren(el('div', { class: 'secret', role: 'status' },
        el('p', {}, t('secretOnce', { name: created.name })), el('code', { class: 'secret-value' }, created.secret), copyButton(created.secret)));
    });
  });
  const rows = list.map((k) => {
    const revoke = el('button', { type: 'button', class: 'danger', disabled: k.revoked, 'aria-label': `${t('revoke')} ${k.name}` }, t('revoke'));
    const s = errorSlot();
    revoke.addEventListener('click', () => busy(revoke, s, async () => {
      await api(`/apiKey/${k.id}`, { method: 'DELETE' });
      await drawKeys(section, me);
    }));
    return el('tr', {}, el('td', {}, k.name), el('td', {}, el('code', {}, `${k.prefix}…`)), el('td', {}, (k.grants || []).join(' ')),
      el('td', {}, dateTime(k.createdDate)), el('td', {}, dateTime(k.lastUsed)), el('td', {}, k.revoked ? badge(t('revoked')) : revoke, s));
  });
  section.replaceChildren(el('h2', {}, t('yourKeys')), form, slot, el('div', { class: 'secret-slot' }, secret),
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, [t('name'), t('keyPrefix'), t('grants'), t('created'), t('lastUsed'), ''].map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows))));
}

async function drawUsers(section, me, may) {
  const list = records(await api('/user?order_by=email&pageSize=200&fields=email,name,type,status'), 'user');
  const create = may('user', 'POST') ? el('a', { href: '#/admin/new/user', class: 'button-link' }, t('newRecord', { resource: resourceWord('user') })) : null;
  const rows = list.map((u) => {
    const s = errorSlot();
    const invite = el('button', { type: 'button', class: 'secondary', 'aria-label': t('inviteUser', { email: u.email }) }, t('invite'));
    invite.addEventListener('click', () => busy(invite, s, async () => {
      const answer = await api('/invitation', { method: 'POST', json: { user: u.id } });
      s.replaceChildren(el('div', { class: 'secret' }, el('p', {}, t('inviteLink', { email: u.email })), el('code', { class: 'secret-value' }, answer.link), copyButton(answer.link)));
    }));
    const disabled = u.status === 'disabled';
    const toggle = el('button', { type: 'button', class: disabled ? 'secondary' : 'danger' }, disabled ? t('enable') : t('disable'));
    toggle.addEventListener('click', () => busy(toggle, s, async () => {
      await api(`/user/${u.id}`, { method: 'PATCH', json: { status: disabled ? 'active' : 'disabled' } });
      await drawUsers(section, me);
    }));
    const own = u.id === me.user;
    return el('tr', {}, el('td', {}, el('a', { href: `#/admin/edit/user/${u.id}` }, u.email)), el('td', {}, u.name),
      el('td', {}, has(`val_type_${u.type}`) ? t(`val_type_${u.type}`) : u.type), el('td', {}, el('span', { class: `badge badge-${u.status}` }, has(`val_status_${u.status}`) ? t(`val_status_${u.status}`) : u.status)),
      el('td', { class: 'actions' }, own ? null : invite, own ? null : toggle, s));
  });
  section.replaceChildren(el('div', { class: 'card-head' }, el('h2', {}, t('users')), create),
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, [t('email'), t('name'), t('type'), t('status'), ''].map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows))));
}
