// Dashboard: files pending, processing and failed; orders by status; recent activity.
import { api, records } from '../api.js';
import { t, number, dateTime } from '../i18n.js';
import { el, heading } from '../ui.js';
import { orderLifecycle, statusWord } from '../lifecycle.js';
import { statusBadge } from './orders.js';
import { typeWord } from './files.js';

async function count(path) {
  try { return (await api(path)).count; } catch { return null; }
}

function tile(label, value, href) {
  return el('a', { class: 'tile', href }, el('span', { class: 'tile-value' }, value === null ? '—' : number(value)), el('span', { class: 'tile-label' }, label));
}

export async function render(main, { me, may }) {
  const parts = [heading(t('dashboard'))];
  // Files are for those who upload them (hosts upload nothing).
  const uploads = may('file', 'GET') && me.uploads.length > 0;
  if (uploads) {
    const [pending, processing, failed] = await Promise.all(['pending', 'processing', 'failed'].map((s) => count(`/file/count?status=${s}`)));
    parts.push(el('section', { 'aria-label': t('files') }, el('div', { class: 'tiles' },
      tile(t('filesPending'), pending, '#/browse/file?status=pending'),
      tile(t('filesProcessing'), processing, '#/browse/file?status=processing'),
      tile(t('filesFailed'), failed, '#/browse/file?status=failed'))));
  }
  const lc = may('order', 'GET') ? await orderLifecycle() : null;
  if (lc) {
    const statuses = lc.statuses.map((s) => s.code);
    const counts = await Promise.all(statuses.map((s) => count(`/order/count?status=${s}`)));
    parts.push(el('section', {}, el('h2', {}, t('ordersByStatus')), el('div', { class: 'tiles small' },
      statuses.map((s, i) => tile(statusWord(lc, s), counts[i], `#/orders/${s}`)))));
  }
  const recent = el('div', { class: 'columns' });
  if (uploads) {
    const list = records(await api('/file?order_by=createdDate<&pageSize=6&fields=fileName,fileType,status,createdDate'), 'file');
    recent.append(el('section', { class: 'card' }, el('h2', {}, t('recentFiles')), el('ul', { class: 'activity' }, list.map((f) =>
      el('li', {}, el('a', { href: `#/browse/file/${f.id}` }, f.fileName), ' ', el('span', { class: `badge badge-${f.status}` }, t(`fileStatus_${f.status}`)), el('span', { class: 'muted' }, ` ${typeWord(f.fileType)} · ${dateTime(f.createdDate)}`))))));
  }
  if (may('order', 'GET')) {
    const list = records(await api('/order?order_by=orderDate<&pageSize=6&fields=brandOrderRef,hostOrderRef,status,orderDate'), 'order');
    recent.append(el('section', { class: 'card' }, el('h2', {}, t('recentOrders')), el('ul', { class: 'activity' }, list.map((o) =>
      el('li', {}, el('a', { href: `#/orders/o/${o.id}` }, o.brandOrderRef || o.hostOrderRef || o.id), ' ', statusBadge(lc, o.status), el('span', { class: 'muted' }, ` ${dateTime(o.orderDate)}`))))));
  }
  parts.push(recent);
  main.replaceChildren(...parts);
}
