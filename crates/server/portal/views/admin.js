// Admin: the user's own API keys (create with grants, the secret shown once with a copy
// button, revoke); for admins and sponsors, users (create, invite, disable).
import { api, records } from '../api.js';
import { t, dateTime } from '../i18n.js';
import { el, field, heading, errorSlot, busy, copyButton, badge } from '../ui.js';

export async function render(main, { me, may }) {
  const keys = el('section', { class: 'card' });
  await drawKeys(keys, me);
  const parts = [heading(t('admin')), keys];
  if ((me.type === 'admin' || me.type === 'sponsor') && may('user', 'GET')) {
    const users = el('section', { class: 'card' });
    await drawUsers(users, me);
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
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, [t('name'), 'prefix', t('grants'), t('created'), t('lastUsed'), ''].map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows))));
}

async function drawUsers(section, me) {
  const list = records(await api('/user?order_by=email&pageSize=200&fields=email,name,type,status'), 'user');
  const email = el('input', { type: 'email' });
  const name = el('input', { type: 'text' });
  const types = me.type === 'admin' ? ['admin', 'sponsor', 'company', 'host', 'warehouse'] : ['sponsor', 'company'];
  const type = el('select', {}, types.map((x) => el('option', { value: x }, x)));
  const button = el('button', { type: 'submit' }, t('createUser'));
  const slot = errorSlot();
  const form = el('form', { class: 'row' }, field(t('email'), email), field(t('name'), name), field(t('type'), type), el('div', { class: 'field end' }, button));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      const body = { email: email.value, name: name.value, type: type.value };
      if (me.type === 'sponsor' && me.sponsor) body.fk_sponsor = me.sponsor;
      await api('/user', { method: 'POST', json: body });
      await drawUsers(section, me);
    });
  });
  const rows = list.map((u) => {
    const s = errorSlot();
    const invite = el('button', { type: 'button', class: 'secondary' }, t('invite'));
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
    return el('tr', {}, el('td', {}, u.email), el('td', {}, u.name), el('td', {}, u.type), el('td', {}, badge(u.status)),
      el('td', { class: 'actions' }, own ? null : invite, own ? null : toggle, s));
  });
  section.replaceChildren(el('h2', {}, t('users')), form, slot,
    el('div', { class: 'table-wrap' }, el('table', {}, el('thead', {}, el('tr', {}, [t('email'), t('name'), t('type'), t('status'), ''].map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, rows))));
}
