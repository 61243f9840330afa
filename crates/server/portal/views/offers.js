// Offers: what each store can sell now, how many and at what price (the API's `offer`,
// kept by brandhub from the stock, the prices and the brand stores' rules). A table in words,
// by status with counts ("Out of stock" one click away), by store, changed since a day;
// the host's own SKU set in place in the table (click, type, Enter); the feed of the offers
// shown exported as CSV. Status words come from the API's description of the field.
import { api, records, download } from '../api.js';
import { t, number, money, dateTime } from '../i18n.js';
import { el, field, heading, errorSlot, busy, serverWords, fromServer } from '../ui.js';
import { recordSchema, wordOf, keyed, titleOf } from '../describe.js';

const PAGE_SIZE = 25;
/** Who writes an offer's host SKU (docs/API.md, "Host SKUs"): host users on their stores'
 * offers, admins on any; company and sponsor users read it. */
const SKU_WRITERS = ['host', 'admin'];
/** The fields a row shows, the store's name and its host's among them. */
const FIELDS = ['id', 'title', 'colour', 'size', 'barcode', 'hostSku', 'available', 'price', 'rrp', 'currency', 'status',
  'updatedDate', 'fk_store', 'offer_store.name', 'offer_store.store_host.name'];
/** The columns a user may sort by: their key in the address and the API's order key. */
const SORTS = { product: 'title', available: 'available', price: 'price', status: 'status', changed: 'updatedDate' };

/** Whether a user type sees the Offers section (warehouses see no offers). */
export const offersFor = (me, may) => may('offer', 'GET') && me.type !== 'warehouse';

/** What the address asks for: status, store, changed since (a day), sort and page. */
function filterOf(query, statuses) {
  const status = statuses.includes(query.get('status')) ? query.get('status') : '';
  const since = /^\d{4}-\d{2}-\d{2}$/.test(query.get('since') || '') ? query.get('since') : '';
  const store = /^[0-9A-Fa-f]{32}$/.test(query.get('store') || '') ? query.get('store') : '';
  const sortKey = (query.get('sort') || '').replace(/-$/, '');
  const sort = sortKey in SORTS ? query.get('sort') : '';
  return { status, since, store, sort, page: Math.max(1, parseInt(query.get('page'), 10) || 1) };
}

function hashOf(filter) {
  const q = new URLSearchParams();
  for (const key of ['status', 'since', 'store', 'sort']) if (filter[key]) q.set(key, filter[key]);
  if (filter.page > 1) q.set('page', filter.page);
  const text = q.toString();
  return `#/offers${text ? '?' + text : ''}`;
}

/** The API's filters for a view's filter (without paging): the feed exported is the same. */
function apiFilters(filter, status = filter.status) {
  const q = new URLSearchParams();
  if (status) q.set('status', status);
  if (filter.store) q.set('fk_store', filter.store);
  if (filter.since) q.set('updatedDate', `>=${filter.since}`);
  return q;
}

function apiOrder(filter) {
  if (!filter.sort) return 'title;colour;size;barcode';
  const descending = filter.sort.endsWith('-');
  const key = SORTS[filter.sort.replace(/-$/, '')];
  return `${key}${descending ? '<' : ''};title;barcode`;
}

/** Goes to a list's address; the same address again is drawn again. */
function goTo(hash, redraw) {
  if (location.hash === hash) redraw();
  else location.hash = hash;
}

/** The stores the user sees, for the picker, as "Store · Host" unless all are one host's. */
async function storeOptions() {
  const answer = await api('/store?fields=id,name,store_host.name&order_by=name&pageSize=1000');
  const full = keyed(answer);
  const stores = records(answer, 'store').map((s) => ({ id: s.id, name: s.name || '', host: (full(s.store_host) || {}).name || '' }));
  const oneHost = new Set(stores.map((s) => s.host)).size <= 1;
  return stores.map((s) => ({ id: s.id, label: oneHost || !s.host ? s.name : `${s.name} · ${s.host}` }));
}

/** A status as a badge in words. */
function statusBadge(property, code) {
  return el('span', { class: `badge badge-${String(code).replace(/[^a-zA-Z]/g, '')}`, 'data-status': code }, wordOf(property, code));
}

/** What a refused SKU write says, next to the SKU typed. */
function skuProblem(error) {
  const problem = error.problem || {};
  const lead = { 409: t('skuTaken'), 422: t('skuInvalid'), 403: t('skuNotAllowed'), 404: t('offerGone'), 412: t('offerChanged'), 0: t('noConnection') }[error.status];
  const details = (problem.errors || []).map((e) => e.message).filter(Boolean);
  return el('div', { class: 'problem', role: 'alert', 'data-problem': String(error.status) },
    el('strong', {}, lead || problem.title || t('failed')),
    details.length || (error.status !== 409 && problem.detail)
      ? (fromServer(error) ? serverWords : (node) => node)(el('p', {}, details.length ? details.join(' ') : problem.detail))
      : null);
}

/** The SKU cell: the SKU as a button that turns into a field; Enter saves it, Escape leaves
 * it as it was. Read-only for those who may not write it. */
function skuCell(offer, editable, label) {
  const td = el('td', { class: 'sku', 'data-label': label });
  const show = (saved) => {
    if (!editable) return td.replaceChildren(offer.hostSku || '');
    const button = el('button', { type: 'button', class: 'sku-edit', 'data-offer': offer.id, title: t('skuClick'),
      'aria-label': t('skuEdit', { offer: [offer.title, offer.colour, offer.size].filter(Boolean).join(', ') }) },
    offer.hostSku ? el('span', { class: 'mono' }, offer.hostSku) : el('span', { class: 'muted' }, t('skuAdd')));
    button.addEventListener('click', edit);
    td.replaceChildren(button, saved ? el('span', { class: 'saved', role: 'status' }, t('skuSaved')) : '');
    return button;
  };
  const edit = () => {
    const input = el('input', { type: 'text', value: offer.hostSku || '', class: 'sku-input', autocomplete: 'off', spellcheck: 'false',
      'data-offer': offer.id, 'aria-label': label, placeholder: t('skuPlaceholder') });
    const slot = el('div', { class: 'error-slot', 'aria-live': 'polite' });
    let saving = false;
    input.addEventListener('keydown', async (event) => {
      if (event.key === 'Escape') { event.preventDefault(); show().focus(); return; }
      if (event.key !== 'Enter') return;
      event.preventDefault();
      const value = input.value.trim();
      if (value === (offer.hostSku || '')) { show().focus(); return; }
      saving = true;
      input.readOnly = true;
      slot.replaceChildren();
      try {
        const answer = await api(`/offer/${encodeURIComponent(offer.id)}`, { method: 'PATCH', json: { hostSku: value } });
        const after = records(answer, 'offer')[0];
        offer.hostSku = after ? after.hostSku : value;
        show(true).focus();
      } catch (error) {
        slot.replaceChildren(skuProblem(error));
        input.readOnly = false;
        input.focus();
      } finally {
        saving = false;
      }
    });
    // Leaving the field unchanged puts the SKU back; a changed one waits for Enter or Escape.
    input.addEventListener('blur', () => {
      setTimeout(() => { if (!saving && td.contains(input) && input.value.trim() === (offer.hostSku || '') && !slot.children.length) show(); }, 150);
    });
    td.replaceChildren(input, slot);
    input.focus();
    input.select();
  };
  show();
  return td;
}

export async function render(main, context) {
  const { query, me, may } = context;
  const own = await recordSchema('offer');
  const statusProperty = own.properties.status;
  const statuses = Object.keys((statusProperty && statusProperty['x-brandhub-words']) || {});
  const filter = filterOf(query, statuses);
  const redraw = () => render(main, context);
  const editable = SKU_WRITERS.includes(me.type) && may('offer', 'PATCH');
  const skuTitle = me.type === 'host' ? t('yourSku') : titleOf(own.properties.hostSku, t('hostSku'));

  // The filters: store, changed since.
  const stores = await storeOptions().catch(() => []);
  const storeSelect = el('select', { name: 'store' },
    el('option', { value: '' }, t('allStores')),
    stores.map((s) => el('option', { value: s.id, selected: s.id === filter.store }, s.label)));
  const since = el('input', { type: 'date', name: 'since', value: filter.since });
  const form = el('form', { class: 'offer-filters', role: 'search' },
    field(t('store'), storeSelect),
    field(t('changedSince'), since),
    el('div', { class: 'filter-buttons' },
      el('button', { type: 'submit' }, t('apply')),
      filter.store || filter.since ? el('a', { class: 'button-like secondary', href: hashOf({ status: filter.status, page: 1 }) }, t('clear')) : null));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    goTo(hashOf({ ...filter, store: storeSelect.value, since: since.value, page: 1 }), redraw);
  });
  storeSelect.addEventListener('change', () => goTo(hashOf({ ...filter, store: storeSelect.value, since: since.value, page: 1 }), redraw));

  // Shortcuts by status, each with its count under the same filters.
  const tabCodes = ['', ...statuses];
  const counts = await Promise.all(tabCodes.map((s) => api(`/offer/count?${apiFilters(filter, s)}`).then((a) => a.count, () => null)));
  const tabs = el('nav', { class: 'tabs', 'aria-label': t('status') }, tabCodes.map((s, i) => {
    const current = s === filter.status;
    return el('a', { href: hashOf({ ...filter, status: s, page: 1 }), class: current ? 'active' : '', 'aria-current': current ? 'page' : false, 'data-tab': s || 'all' },
      s ? wordOf(statusProperty, s) : t('allOffers'), counts[i] === null ? null : el('span', { class: 'count' }, number(counts[i])));
  }));

  // The page of offers.
  const q = apiFilters(filter);
  q.set('fields', FIELDS.join(','));
  q.set('order_by', apiOrder(filter));
  q.set('pageSize', PAGE_SIZE);
  q.set('page', filter.page);
  const answer = await api(`/offer?${q}`);
  const list = records(answer, 'offer');
  const full = keyed(answer);
  const info = answer.response;
  const showHost = new Set(list.map((o) => (full(full(o.offer_store).store_host) || {}).name || '')).size > 1 || me.type !== 'host';

  const columns = [
    { key: 'product', title: t('product') },
    { title: t('colour') },
    { title: t('size') },
    { title: t('barcode') },
    { title: t('store') },
    { title: skuTitle, class: 'sku' },
    { key: 'available', title: t('available'), class: 'num' },
    { key: 'price', title: t('price'), class: 'num' },
    { key: 'status', title: t('status') },
    { key: 'changed', title: t('lastChanged') },
  ];
  const header = columns.map((c) => {
    if (!c.key) return el('th', { scope: 'col', class: c.class || '' }, c.title);
    const ascending = filter.sort === c.key || (!filter.sort && c.key === 'product');
    const descending = filter.sort === `${c.key}-`;
    return el('th', { scope: 'col', class: c.class || '', 'aria-sort': ascending ? 'ascending' : descending ? 'descending' : 'none' },
      el('a', { class: 'sort', href: hashOf({ ...filter, sort: ascending ? `${c.key}-` : c.key, page: 1 }), 'aria-label': t('sortBy', { field: c.title }) },
        c.title, ascending ? ' ▲' : descending ? ' ▼' : ''));
  });
  const rows = list.map((o) => {
    const store = full(o.offer_store) || {};
    const host = (full(store.store_host) || {}).name || '';
    return el('tr', { 'data-offer': o.id, 'data-status': o.status },
      el('td', { class: 'product', 'data-label': t('product') }, el('a', { href: `#/browse/offer/${o.id}` }, o.title || t('openRecord'))),
      el('td', { 'data-label': t('colour') }, o.colour || ''),
      el('td', { 'data-label': t('size') }, o.size || ''),
      el('td', { class: 'mono', 'data-label': t('barcode') }, o.barcode || ''),
      el('td', { class: 'store', 'data-label': t('store'), title: [store.name, host].filter(Boolean).join(' · ') }, store.name || '', showHost && host ? el('div', { class: 'muted' }, host) : null),
      skuCell(o, editable, skuTitle),
      el('td', { class: 'num', 'data-label': t('available') }, number(o.available ?? 0)),
      el('td', { class: 'num', 'data-label': t('price'), 'data-money': '' }, o.price === null || o.price === undefined ? el('span', { class: 'muted' }, t('noPrice')) : money(o.price, o.currency),
        o.rrp && o.rrp !== o.price ? el('div', { class: 'muted rrp' }, `${t('rrp')} ${money(o.rrp, o.currency)}`) : null),
      el('td', { 'data-label': t('status') }, statusBadge(statusProperty, o.status)),
      el('td', { class: 'changed', 'data-label': t('lastChanged') }, dateTime(o.updatedDate)));
  });
  const table = el('div', { class: 'table-wrap' }, el('table', { class: 'offers' },
    el('thead', {}, el('tr', {}, header)),
    el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: columns.length, class: 'muted' }, t('noOffers'))))));

  // The feed of the offers shown (every page), as CSV.
  const slot = errorSlot();
  const feed = new URLSearchParams(apiFilters(filter));
  feed.set('order_by', apiOrder(filter));
  feed.set('format', 'csv');
  const exportButton = el('button', { type: 'button', class: 'secondary', 'data-export': `/api/offer?${feed}` }, t('exportFeed'));
  exportButton.addEventListener('click', () => busy(exportButton, slot, () => download(`/offer?${feed}`, 'offers.csv')));

  const total = info.recordsFound || 0;
  const pages = Math.max(1, info.pageCount || 0);
  const summary = el('p', { class: 'muted', role: 'status' },
    `${t(total === 1 ? 'offerFound' : 'offersFound', { count: number(total) })} · ${t('pageOf', { page: number(filter.page), pages: number(pages) })}`);
  const previous = el('button', { type: 'button', class: 'secondary', disabled: filter.page <= 1 }, t('previousPage'));
  const next = el('button', { type: 'button', class: 'secondary', disabled: filter.page >= pages }, t('nextPage'));
  previous.addEventListener('click', () => goTo(hashOf({ ...filter, page: filter.page - 1 }), redraw));
  next.addEventListener('click', () => goTo(hashOf({ ...filter, page: filter.page + 1 }), redraw));

  main.replaceChildren(...[
    el('div', { class: 'page-head' }, heading(t('offers')), el('div', { class: 'page-actions' }, exportButton)),
    el('p', { class: 'muted intro' }, t('offersIntro')),
    slot,
    el('section', { class: 'filters', 'aria-label': t('filters') }, form),
    tabs,
    editable ? el('p', { class: 'hint' }, t('skuHint')) : null,
    summary, table, el('div', { class: 'pager' }, previous, next)].filter(Boolean));
}
