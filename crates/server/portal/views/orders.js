// Orders: lists by status, an order with its items. Lifecycle actions plug in through
// ORDER_ACTIONS: each names the statuses it applies to, the user types that may take it, and
// what it sends; the order page shows those the user may take.
import { api, records } from '../api.js';
import { t, number, dateTime, display } from '../i18n.js';
import { el, heading, badge, errorSlot, busy } from '../ui.js';

/** The order statuses of the lifecycle (CONTRACT §11), in their order. */
export const ORDER_STATUSES = ['new', 'accepted', 'rejected', 'partDispatched', 'dispatched', 'delivered', 'returned', 'cancelled'];

/** Lifecycle actions: { label, from: [statuses], types: [user types], body(order) }. */
export const ORDER_ACTIONS = [];

const MONEY = ['gross', 'net', 'vat'];

export async function render(main, { parts, me }) {
  if (parts[0] === 'o' && parts[1]) return renderOrder(main, parts[1], me);
  const status = ORDER_STATUSES.includes(parts[0]) ? parts[0] : '';
  const tabs = el('nav', { class: 'tabs', 'aria-label': t('status') },
    [['', t('all')], ...ORDER_STATUSES.map((s) => [s, s])].map(([s, label]) =>
      el('a', { href: `#/orders/${s}`, class: s === status ? 'active' : '', 'aria-current': s === status ? 'page' : false }, label)));
  const q = new URLSearchParams({ order_by: 'orderDate<', pageSize: '50' });
  if (status) q.set('status', status);
  const list = records(await api(`/order?${q}`), 'order');
  const showMoney = list.some((o) => o.detail && MONEY.some((m) => m in o.detail));
  const head = [t('record'), 'hostOrderRef', t('status'), 'orderDate', ...(showMoney ? ['gross'] : [])];
  main.replaceChildren(heading(t('orders')), tabs, el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, list.length ? list.map((o) => el('tr', {},
      el('td', {}, el('a', { href: `#/orders/o/${o.id}` }, o.brandOrderRef || o.id.slice(0, 8))),
      el('td', {}, o.hostOrderRef), el('td', {}, badge(o.status)), el('td', {}, dateTime(o.orderDate)),
      showMoney ? el('td', { class: 'num' }, number(o.detail.gross)) : null))
      : el('tr', {}, el('td', { colspan: head.length, class: 'muted' }, t('noRecords')))))));
}

async function renderOrder(main, id, me) {
  const order = records(await api(`/order/${encodeURIComponent(id)}`), 'order')[0];
  const items = records(await api(`/orderItem?fk_order=${encodeURIComponent(id)}&pageSize=1000`), 'orderItem');
  const scalar = Object.entries(order).filter(([, v]) => v === null || typeof v !== 'object');
  const detail = Object.entries(order.detail || {});
  const itemColumns = items.length ? Object.keys(items[0]).filter((k) => k !== 'id' && !k.startsWith('fk_') && (items[0][k] === null || typeof items[0][k] !== 'object')) : [];
  const actions = ORDER_ACTIONS.filter((a) => a.from.includes(order.status) && a.types.includes(me.type));
  const slot = errorSlot();
  main.replaceChildren(
    el('p', {}, el('a', { href: '#/orders' }, `← ${t('orders')}`)),
    heading(`${t('orders')}: ${order.brandOrderRef || order.id}`),
    el('div', { class: 'columns' },
      el('section', { class: 'card' }, el('dl', { class: 'record' }, [...scalar, ...detail].flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, k === 'status' ? badge(v) : display(v))]))),
      el('section', { class: 'card' }, el('h2', {}, t('actions')),
        actions.length ? el('div', { class: 'actions' }, actions.map((a) => {
          const b = el('button', { type: 'button' }, a.label);
          b.addEventListener('click', () => busy(b, slot, async () => {
            await api(`/order/${order.id}`, { method: 'PATCH', json: a.body(order) });
            await renderOrder(main, id, me);
          }));
          return b;
        })) : el('p', { class: 'muted' }, t('noActions')), slot)),
    el('section', { class: 'card' }, el('h2', {}, t('orderItems')), el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, itemColumns.map((c) => el('th', { scope: 'col' }, c)))),
      el('tbody', {}, items.map((item) => el('tr', {}, itemColumns.map((c) => el('td', { class: typeof item[c] === 'number' ? 'num' : '' }, display(item[c]))))))))));
}
