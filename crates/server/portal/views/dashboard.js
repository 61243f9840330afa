// Dashboard by user type: a warehouse sees what to ship and what is late; a company its files,
// orders and stock-outs; a host its open orders; everyone who reads orders a chart of orders
// per day over the last 30 days, drawn here as SVG; then recent files and orders.
import { api, records } from '../api.js';
import { t, number, dateTime, locale } from '../i18n.js';
import { el, heading } from '../ui.js';
import { orderLifecycle, statusWord, step, notYetDispatched } from '../lifecycle.js';
import { statusBadge } from './orders.js';
import { offersFor } from './offers.js';
import { recordSchema, wordOf } from '../describe.js';

/** Days the chart covers, today included. */
const CHART_DAYS = 30;
/** Days after the order date past which an open order is late (as the orders list). */
const LATE_DAYS = 2;

async function count(path) {
  try { return (await api(path)).count; } catch { return null; }
}

function tile(label, value, href, name) {
  return el('a', { class: 'tile', href, 'data-tile': name },
    el('span', { class: 'tile-value' }, value === null ? '—' : number(value)), el('span', { class: 'tile-label' }, label));
}

const day = (date) => date.toISOString().slice(0, 10);
const statusQuery = (statuses) => statuses.map((s) => `status=${encodeURIComponent(s)}`).join('&');

/** Orders per day (UTC) of the last `days` days, today last: [{day, count}]. */
async function ordersPerDay(days) {
  const today = new Date();
  const first = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() - (days - 1)));
  const counts = new Map();
  for (let i = 0; i < days; i++) counts.set(day(new Date(first.getTime() + i * 86400000)), 0);
  // One field per order, a thousand a page; past 20 pages the chart shows what it has.
  for (let page = 1; page <= 20; page++) {
    const answer = await api(`/order?orderDate=${encodeURIComponent('>=' + day(first))}&fields=orderDate&pageSize=1000&page=${page}`);
    for (const o of records(answer, 'order')) {
      const key = (o.orderDate || '').slice(0, 10);
      if (counts.has(key)) counts.set(key, counts.get(key) + 1);
    }
    if (page >= answer.response.pageCount) break;
  }
  return [...counts].map(([d, n]) => ({ day: d, count: n }));
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

/** A bar chart of orders per day, `width` units wide (the page's width, so that its text
 * keeps its size on a phone): one bar a day, the highest count on the axis, a date under
 * every seventh bar; each bar's day and count as its tooltip. */
function chart(days, width) {
  const height = 220;
  const left = 36;
  const bottom = 28;
  const top = 12;
  const most = Math.max(1, ...days.map((d) => d.count));
  const slot = (width - left) / days.length;
  const y = (n) => top + (height - top - bottom) * (1 - n / most);
  const short = new Intl.DateTimeFormat(locale(), { day: 'numeric', month: 'short', timeZone: 'UTC' });
  const long = new Intl.DateTimeFormat(locale(), { dateStyle: 'medium', timeZone: 'UTC' });
  const total = days.reduce((n, d) => n + d.count, 0);
  const parts = [
    svg('line', { x1: left, x2: width, y1: y(0), y2: y(0), class: 'axis' }),
    svg('line', { x1: left, x2: width, y1: y(most), y2: y(most), class: 'grid' }),
    svg('text', { x: left - 6, y: y(most) + 4, 'text-anchor': 'end' }, number(most)),
    svg('text', { x: left - 6, y: y(0) + 4, 'text-anchor': 'end' }, '0'),
  ];
  days.forEach((d, i) => {
    const x = left + i * slot + slot * 0.15;
    const when = new Date(d.day + 'T00:00:00Z');
    parts.push(svg('rect', { x, y: y(d.count), width: slot * 0.7, height: Math.max(0, y(0) - y(d.count)), class: 'bar', 'data-day': d.day, 'data-count': d.count },
      svg('title', {}, `${long.format(when)}: ${t('ordersCount', { count: number(d.count) })}`)));
    // A date under every seventh bar, counted back from today's.
    if ((days.length - 1 - i) % 7 === 0) {
      // Today's date ends at its bar's right edge, so that it is never cut off.
      const last = i === days.length - 1;
      parts.push(svg('text', { x: last ? x + slot * 0.7 : x + slot * 0.35, y: height - 8, 'text-anchor': last ? 'end' : 'middle' }, short.format(when)));
    }
  });
  return el('figure', { class: 'chart card' },
    el('figcaption', {}, el('h2', {}, t('ordersPerDay')), el('span', { class: 'muted' }, t('ordersInDays', { count: number(total), days: number(days.length) }))),
    svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${t('ordersPerDay')}: ${number(total)}`, class: 'chart-svg' }, parts));
}

export async function render(main, { may, me }) {
  const parts = [heading(t('dashboard'))];
  const lc = may('order', 'GET') ? await orderLifecycle() : null;
  const tiles = [];
  // What to do now, by user type.
  if (lc && me.type === 'warehouse') {
    const dispatch = step(lc, 'dispatch');
    const toShip = dispatch ? dispatch.from : [];
    const late = notYetDispatched(lc);
    const before = new Date(Date.now() - LATE_DAYS * 86400000).toISOString().slice(0, 19);
    const [ship, overdue] = await Promise.all([
      count(`/order/count?${statusQuery(toShip)}`),
      count(`/order/count?${statusQuery(late)}&orderDate=${encodeURIComponent('<' + before)}`)]);
    tiles.push(tile(t('toShip'), ship, toShip[0] ? `#/orders/${toShip[0]}` : '#/orders', 'toShip'),
      tile(t('lateOrders'), overdue, `#/orders?late=${LATE_DAYS}`, 'late'));
  }
  if (lc && me.type === 'host') {
    const open = notYetDispatched(lc);
    tiles.push(tile(t('openOrders'), await count(`/order/count?${statusQuery(open)}`), '#/orders', 'open'));
  }
  // A host's stores' offers that sell nothing now, one click from the Offers view.
  if (me.type === 'host' && offersFor(me, may)) {
    tiles.push(tile(t('offersOutOfStock'), await count('/offer/count?status=outOfStock'), '#/offers?status=outOfStock', 'offersOut'));
  }
  // Files are for those who upload them (hosts upload nothing).
  const filesShown = may('file', 'GET') && me.uploads.length > 0;
  if (filesShown) {
    const [pending, processing, failed] = await Promise.all(['pending', 'processing', 'failed'].map((s) => count(`/file/count?status=${s}`)));
    tiles.push(
      tile(t('filesPending'), pending, '#/browse/file?status=pending', 'pending'),
      tile(t('filesProcessing'), processing, '#/browse/file?status=processing', 'processing'),
      tile(t('filesFailed'), failed, '#/browse/file?status=failed', 'failed'));
  }
  if (may('stock', 'GET') && me.type !== 'warehouse' && me.type !== 'host') {
    tiles.push(tile(t('stockOuts'), await count('/stock/count?available=0'), '#/browse/stock?available=0', 'stockOuts'));
  }
  if (tiles.length) parts.push(el('section', { 'aria-label': t('dashboard') }, el('div', { class: 'tiles' }, tiles)));
  if (lc) {
    const statuses = lc.statuses.map((s) => s.code);
    const counts = await Promise.all(statuses.map((s) => count(`/order/count?status=${s}`)));
    parts.push(el('section', {}, el('h2', {}, t('ordersByStatus')), el('div', { class: 'tiles small' },
      statuses.map((s, i) => tile(statusWord(lc, s), counts[i], `#/orders/${s}`, s)))));
    // The chart as wide as the page's content (less the card's padding), within bounds.
    const width = Math.max(300, Math.min(960, (main.clientWidth || 720) - 80));
    try { parts.push(chart(await ordersPerDay(CHART_DAYS), width)); } catch { /* no chart without its orders */ }
  }
  const recent = el('div', { class: 'columns' });
  if (filesShown) {
    const file = await recordSchema('file');
    const word = (path, code) => wordOf(file.properties && file.properties[path], code);
    const list = records(await api('/file?order_by=createdDate<&pageSize=6&fields=fileName,fileType,status,createdDate'), 'file');
    recent.append(el('section', { class: 'card' }, el('h2', {}, t('recentFiles')), el('ul', { class: 'activity' }, list.map((f) =>
      el('li', {}, el('a', { href: `#/browse/file/${f.id}` }, f.fileName), ' ',
        el('span', { class: `badge badge-${f.status}` }, word('status', f.status)),
        el('span', { class: 'muted' }, ` ${word('fileType', f.fileType)} · ${dateTime(f.createdDate)}`))))));
  }
  if (lc) {
    const list = records(await api('/order?order_by=orderDate<&pageSize=6&fields=brandOrderRef,hostOrderRef,status,orderDate'), 'order');
    recent.append(el('section', { class: 'card' }, el('h2', {}, t('recentOrders')), el('ul', { class: 'activity' }, list.map((o) =>
      el('li', {}, el('a', { href: `#/orders/o/${o.id}` }, o.brandOrderRef || o.hostOrderRef || t('openRecord')), ' ', statusBadge(lc, o.status), el('span', { class: 'muted' }, ` ${dateTime(o.orderDate)}`))))));
  }
  parts.push(recent);
  main.replaceChildren(...parts);
}
