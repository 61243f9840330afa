// Orders: the lists (every order, paged, by status with counts, searched, by date and age,
// several shipped in one go) and an order's page (what to pick and where to send it, and a
// form for each step of the lifecycle the user may take now). Which steps there are, who may
// take them and from which status all come from the API's description of the lifecycle
// (lifecycle.js); the forms only know what each kind of step asks for.
import { api, records, schema } from '../api.js';
import { t, number, dateTime, money, locale } from '../i18n.js';
import { el, field, heading, errorSlot, serverWords } from '../ui.js';
import { orderLifecycle, statusWord, lineStatusWord, reasonWord, stepsFor, step as stepNamed, notYetDispatched } from '../lifecycle.js';

const PAGE_SIZE = 25;
/** What the search box looks in: order and host references, the customer, the parcel. */
const SEARCHED = ['brandOrderRef', 'hostOrderRef', 'hostCustOrderRef', 'trackingRef', 'shipAddress.surname', 'shipAddress.forename', 'shipAddress.company'];
/** Days after the order date past which an open order is late, unless the user says. */
const LATE_DAYS = 2;

export function statusBadge(lc, code) {
  return el('span', { class: `badge badge-${String(code).replace(/[^a-zA-Z]/g, '')}`, 'data-status': code }, statusWord(lc, code));
}

function lineBadge(lc, item) {
  const word = lineStatusWord(lc, item.status);
  const reason = item.status === 'REJ' && item.detail && item.detail.reason ? ` · ${reasonWord(lc, item.detail.reason)}` : '';
  return el('span', { class: `badge badge-line-${item.status}`, 'data-status': item.status }, word + reason);
}

/** Whether the user type may read a property of a resource (the description marks the
 * properties hidden from some types with x-hidden-from). */
async function readable(resource, path, type) {
  const doc = await schema();
  let node = doc.components.schemas[resource[0].toUpperCase() + resource.slice(1)];
  for (const name of path.split('.')) node = node && node.properties && node.properties[name];
  return Boolean(node) && !(node['x-hidden-from'] || []).includes(type);
}

/** UTC timestamp in the contract's form. */
function stamp(when) {
  return when.toISOString().slice(0, 19);
}

/** Related records of an answer by id: an entity shown expanded earlier in an answer comes
 * again as a {__KEY} reference; `full(ref)` gives the expanded one where there is one. */
function keyed(answer) {
  const seen = new Map();
  const walk = (value) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      if (value.id && !seen.has(value.id)) seen.set(value.id, value);
      Object.values(value).forEach(walk);
    }
  };
  walk(answer);
  return (ref) => (ref && ref.__KEY && seen.get(ref.__KEY)) || ref || {};
}

/** Whole days from a contract timestamp to now. */
function daysSince(value) {
  const then = new Date(value + 'Z').getTime();
  return Number.isNaN(then) ? 0 : Math.max(0, Math.floor((Date.now() - then) / 86400000));
}

const daysWord = (n) => t(n === 1 ? 'dayOld' : 'daysOld', { count: number(n) });

/** Records of a resource by id (only what the user may read; nothing when it may not). */
async function byIds(resource, ids, fields, may) {
  const unique = [...new Set(ids.filter(Boolean))];
  if (!unique.length || !may(resource, 'GET')) return new Map();
  const q = new URLSearchParams();
  unique.forEach((id) => q.append('id', id));
  q.set('fields', fields);
  q.set('pageSize', '1000');
  try {
    return new Map(records(await api(`/${resource}?${q}`), resource).map((r) => [r.id, r]));
  } catch { return new Map(); }
}

const nameOf = (record) => (record && record.name) || '';
const storeLabel = (store) => store ? [store.name, store.store_host && store.store_host.name].filter(Boolean).join(' · ') : '';

function customer(address) {
  if (!address) return '';
  const person = [address.forename, address.surname].filter(Boolean).join(' ');
  return person || address.company || '';
}

/** The words of a search as a complex query: each field contains the first word (any of
 * them), and, when there are more, contains the others too, in their order. */
function searchBody(text) {
  const words = text.trim().split(/\s+/).filter(Boolean);
  if (!words.length) return null;
  const anyField = (value) => SEARCHED.map((f, i) => ({ field: f, operator: '=', value: `@${value}@`, ...(i ? { conjunction: '|' } : {}) }));
  const body = { query: anyField(words[0]) };
  if (words.length > 1) body.queryselection = anyField(words.slice(1).join('@'));
  return body;
}

/** What a list shows: the statuses asked (null: any), URL filters and a search body. */
function listRequest(lc, filter, status) {
  let statuses = status ? [status] : null;
  if (filter.late !== null) {
    const open = notYetDispatched(lc);
    statuses = status ? open.filter((s) => s === status) : open;
  }
  const url = new URLSearchParams();
  (statuses || []).forEach((s) => url.append('status', s));
  if (filter.from) url.append('orderDate', `>=${filter.from}`);
  if (filter.to) url.append('orderDate', `<=${filter.to}`);
  if (filter.late !== null) url.append('orderDate', `<${stamp(new Date(Date.now() - filter.late * 86400000))}`);
  return { statuses, url, body: searchBody(filter.q) };
}

async function countOf(request) {
  if (request.statuses && !request.statuses.length) return 0;
  const q = request.url.toString();
  const answer = request.body
    ? await api(`/order/count?${q}`, { method: 'POST', json: request.body })
    : await api(`/order/count?${q}`);
  return answer.count;
}

async function pageOf(request, page, fields) {
  if (request.statuses && !request.statuses.length) return { response: { order: [], recordsFound: 0, pageCount: 0, page } };
  const q = new URLSearchParams(request.url);
  q.set('page', page);
  q.set('pageSize', PAGE_SIZE);
  q.set('order_by', 'orderDate<');
  q.set('fields', fields.join(','));
  return request.body ? api(`/order/query?${q}`, { method: 'POST', json: request.body }) : api(`/order?${q}`);
}

function filterOf(query) {
  const late = query.has('late') ? Math.min(3650, Math.max(0, parseInt(query.get('late'), 10) || 0)) : null;
  return {
    q: query.get('q') || '',
    from: /^\d{4}-\d{2}-\d{2}$/.test(query.get('from') || '') ? query.get('from') : '',
    to: /^\d{4}-\d{2}-\d{2}$/.test(query.get('to') || '') ? query.get('to') : '',
    late,
    page: Math.max(1, parseInt(query.get('page'), 10) || 1),
  };
}

function hashOf(status, filter) {
  const q = new URLSearchParams();
  if (filter.q) q.set('q', filter.q);
  if (filter.from) q.set('from', filter.from);
  if (filter.to) q.set('to', filter.to);
  if (filter.late !== null) q.set('late', filter.late);
  if (filter.page > 1) q.set('page', filter.page);
  const text = q.toString();
  return `#/orders${status ? '/' + status : ''}${text ? '?' + text : ''}`;
}

/** Goes to a list's address; the same address again is drawn again. */
function goTo(hash, redraw) {
  if (location.hash === hash) redraw();
  else location.hash = hash;
}

export async function render(main, context) {
  if (context.parts[0] === 'o' && context.parts[1]) return renderOrder(main, context.parts[1], context);
  return renderList(main, context);
}

async function renderList(main, context, notice) {
  const { parts, query, me, may } = context;
  const lc = await orderLifecycle();
  const codes = lc.statuses.map((s) => s.code);
  const status = codes.includes(parts[0]) ? parts[0] : '';
  const filter = filterOf(query);
  const redraw = () => renderList(main, context);

  // The filters: search, dates, late.
  const search = el('input', { type: 'search', name: 'q', value: filter.q, placeholder: t('searchHint'), autocomplete: 'off' });
  const from = el('input', { type: 'date', name: 'from', value: filter.from });
  const to = el('input', { type: 'date', name: 'to', value: filter.to });
  const late = el('input', { type: 'checkbox', name: 'late', checked: filter.late !== null });
  const days = el('input', { type: 'number', name: 'days', min: '0', max: '3650', step: '1', inputmode: 'numeric', value: String(filter.late ?? LATE_DAYS), class: 'days' });
  const lateId = 'late-' + Math.random().toString(36).slice(2, 8);
  late.id = lateId;
  const form = el('form', { class: 'order-filters', role: 'search' },
    field(t('search'), search),
    field(t('orderedFrom'), from),
    field(t('orderedUntil'), to),
    el('div', { class: 'late-filter' },
      el('label', { class: 'check', for: lateId }, late, t('lateOnly')),
      field(t('lateAfterDays'), days)),
    el('div', { class: 'filter-buttons' },
      el('button', { type: 'submit' }, t('apply')),
      (filter.q || filter.from || filter.to || filter.late !== null)
        ? el('a', { class: 'button-like secondary', href: `#/orders${status ? '/' + status : ''}` }, t('clear')) : null));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const n = parseInt(days.value, 10);
    goTo(hashOf(status, {
      q: search.value.trim(), from: from.value, to: to.value,
      late: late.checked ? (Number.isInteger(n) && n >= 0 ? n : LATE_DAYS) : null, page: 1,
    }), redraw);
  });

  // The page of orders is asked for together with the tabs' counts.
  const showMoney = await readable('order', 'detail.gross', me.type);
  const fields = ['brandOrderRef', 'hostOrderRef', 'status', 'orderDate', 'shipDate', 'carrier', 'trackingRef',
    'shipAddress.forename', 'shipAddress.surname', 'shipAddress.company', 'order_brandStore.fk_brand', 'order_brandStore.fk_store'];
  if (showMoney) fields.push('detail.gross', 'order_orderItem.currency');
  const request = listRequest(lc, filter, status);
  // Tabs by status, each with its count under the same filters.
  const tabCodes = ['', ...codes];
  const [counts, answer] = await Promise.all([
    Promise.all(tabCodes.map((s) => countOf(listRequest(lc, filter, s)).catch(() => null))),
    pageOf(request, filter.page, fields),
  ]);
  const tabs = el('nav', { class: 'tabs', 'aria-label': t('status') }, tabCodes.map((s, i) => {
    const word = s ? statusWord(lc, s) : t('all');
    return el('a', { href: hashOf(s, { ...filter, page: 1 }), class: s === status ? 'active' : '', 'aria-current': s === status ? 'page' : false, 'data-tab': s || 'all' },
      word, counts[i] === null ? null : el('span', { class: 'count' }, number(counts[i])));
  }));

  // The page of orders, with the names of their brands and stores.
  const list = records(answer, 'order');
  const info = answer.response;
  const full = keyed(list);
  const brandStoreOf = (o) => full(o.order_brandStore);
  const brandStores = list.map(brandStoreOf);
  const [brands, stores] = await Promise.all([
    byIds('brand', brandStores.map((b) => b.fk_brand), 'name', may),
    byIds('store', brandStores.map((b) => b.fk_store), 'name,store_host.name', may),
  ]);
  const showStores = stores.size > 0;

  // Shipping several at once: orders the dispatch step is taken from, for users who may.
  const dispatch = stepNamed(lc, 'dispatch');
  const dispatchAction = lc.actions.find((a) => dispatch && a.step === dispatch.step);
  const canShip = Boolean(dispatchAction) && may('order', 'PATCH') && dispatch.who.includes(me.type);
  const shippable = (o) => canShip && dispatch.from.includes(o.status);
  const selected = new Map();
  const bulk = el('section', { class: 'card bulk', 'aria-label': t('shipSelected') });

  // What a phone shows without scrolling comes first: the order, its status, who and when.
  const head = [canShip ? '' : null, t('order'), t('status'), filter.late !== null ? t('age') : null, t('customer'), t('ordered'),
    t('hostReference'), t('brand'), showStores ? t('store') : null, t('shipped'), t('carrier'), t('trackingNumber'),
    showMoney ? t('total') : null].filter((h) => h !== null);
  const rows = list.map((o) => {
    const bs = brandStoreOf(o);
    const currency = (o.order_orderItem || []).map((i) => i.currency).find(Boolean) || '';
    const ref = o.brandOrderRef || o.hostOrderRef || o.id;
    let select = null;
    if (canShip) {
      const box = shippable(o) ? el('input', { type: 'checkbox', 'aria-label': t('selectOrder', { ref }), 'data-order': o.id }) : null;
      if (box) box.addEventListener('change', () => { if (box.checked) selected.set(o.id, o); else selected.delete(o.id); drawBulk(); });
      select = el('td', { class: 'select' }, box);
    }
    return el('tr', { 'data-order': o.id },
      select,
      el('td', {}, el('a', { href: `#/orders/o/${o.id}` }, ref)),
      el('td', {}, statusBadge(lc, o.status)),
      filter.late !== null ? el('td', { class: 'num' }, daysWord(daysSince(o.orderDate))) : null,
      el('td', {}, customer(o.shipAddress)),
      el('td', {}, dateTime(o.orderDate)),
      el('td', {}, o.hostOrderRef || ''),
      el('td', {}, nameOf(brands.get(bs.fk_brand))),
      showStores ? el('td', {}, storeLabel(stores.get(bs.fk_store))) : null,
      el('td', {}, dateTime(o.shipDate)),
      el('td', {}, o.carrier || ''),
      el('td', { class: 'mono' }, o.trackingRef || ''),
      showMoney ? el('td', { class: 'num', 'data-money': '' }, money(o.detail && o.detail.gross, currency)) : null);
  });
  const table = el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: head.length, class: 'muted' }, t('noOrders'))))));

  function drawBulk() {
    if (!canShip) return bulk.replaceChildren();
    if (!selected.size) {
      bulk.hidden = !notice;
      return bulk.replaceChildren(notice || '');
    }
    bulk.hidden = false;
    const carrier = el('input', { type: 'text', autocomplete: 'off' });
    const tracking = [...selected.values()].map((o) => {
      const input = el('input', { type: 'text', autocomplete: 'off', 'data-order': o.id });
      return { order: o, input, field: field(t('trackingFor', { ref: o.brandOrderRef || o.id }), input) };
    });
    const button = el('button', { type: 'submit' }, t('shipSelected'));
    const slot = errorSlot();
    const outcome = el('div', { class: 'outcome', 'aria-live': 'polite' });
    const bulkForm = el('form', { class: 'bulk-form', novalidate: true },
      el('h2', {}, selected.size === 1 ? t('shipSelectedOne') : t('shipSelectedTitle', { count: number(selected.size) })),
      el('p', { class: 'muted' }, t('shipSelectedHint')),
      field(t('carrier'), carrier),
      el('div', { class: 'tracking-list' }, tracking.map((x) => x.field)),
      slot, button, outcome);
    bulkForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      button.disabled = true;
      slot.clear();
      try {
        const dispatches = tracking.map((x) => ({ id: x.order.id, status: 'dispatched', carrier: carrier.value.trim(), trackingRef: x.input.value.trim() }));
        const answer = await api(dispatchAction.path.replace(/^\/api/, ''), { method: 'POST', json: dispatches });
        const results = answer.response.dispatch || [];
        const box = el('div', { class: 'outcome', role: 'status' },
          el('h2', {}, t('shipSelectedDone', { applied: number(answer.response.applied || 0), refused: number(answer.response.refused || 0) })),
          el('ul', { class: 'outcomes' }, results.map((r) => {
            const o = tracking[r.index] ? tracking[r.index].order : null;
            const ref = o ? (o.brandOrderRef || o.id) : r.id;
            if (r.status === 200) return el('li', { class: 'ok', 'data-order': r.id }, el('strong', {}, ref), ': ', t('nowStatus', { status: statusWord(lc, r.orderStatus) }));
            const why = [r.detail, ...(r.errors || []).map((e) => e.message)].filter(Boolean).join(' ');
            const said = why ? serverWords(el('span', {}, why)) : t('refused');
            return el('li', { class: 'refused', 'data-order': r.id }, el('strong', {}, ref), ': ', said);
          })));
        await renderList(main, context, box);
      } catch (error) {
        slot.replaceChildren(problemSentences(error, []));
        button.disabled = false;
      }
    });
    bulk.replaceChildren(bulkForm);
  }
  drawBulk();

  const total = info.recordsFound || 0;
  const pages = Math.max(1, info.pageCount || 0);
  const summary = el('p', { class: 'muted', role: 'status' }, `${t(total === 1 ? 'orderFound' : 'ordersFound', { count: number(total) })} · ${t('pageOf', { page: number(filter.page), pages: number(pages) })}`);
  const previous = el('button', { type: 'button', class: 'secondary', disabled: filter.page <= 1 }, t('previousPage'));
  const next = el('button', { type: 'button', class: 'secondary', disabled: filter.page >= pages }, t('nextPage'));
  previous.addEventListener('click', () => goTo(hashOf(status, { ...filter, page: filter.page - 1 }), redraw));
  next.addEventListener('click', () => goTo(hashOf(status, { ...filter, page: filter.page + 1 }), redraw));

  main.replaceChildren(...[
    heading(t('orders')),
    el('section', { class: 'filters', 'aria-label': t('filters') }, form,
      el('small', { class: 'hint' }, t('lateHint', { days: number(filter.late ?? LATE_DAYS) }))),
    tabs,
    canShip && !notice ? el('p', { class: 'hint' }, t('selectToShip')) : null,
    bulk, summary, table, el('div', { class: 'pager' }, previous, next)].filter(Boolean));
}

/** The title of a line's product. */
const titleOf = (item) => (item.orderItem_variant && item.orderItem_variant.variant_product && item.orderItem_variant.variant_product.title) || '';

/** A line as people name it: product, colour, size and barcode. */
function lineName(item) {
  const v = item.orderItem_variant || {};
  const title = titleOf(item);
  const words = [title, v.colour, v.size].filter(Boolean).join(', ');
  return v.barcode ? `${words} (${v.barcode})` : words || item.hostItemRef || item.id;
}

/** The words of a field the API names in a problem. */
function fieldWord(path) {
  const name = String(path || '').replace(/^order_orderItem\./, '');
  const words = { shipQty: t('quantityShipped'), returnQty: t('quantityReturned'), 'detail.reason': t('reason'), status: t('status'),
    carrier: t('carrier'), trackingRef: t('trackingNumber'), id: t('line'), order_orderItem: t('lines') };
  return words[name] || name;
}

/** An error of the API as sentences next to the form: what happened, and each problem with
 * the line it concerns. */
function problemSentences(error, lines) {
  const problem = error.problem || { detail: String(error.message || error) };
  const lead = {
    403: t('notAllowed'), 404: t('orderGone'), 409: t('orderChanged'), 412: t('orderChanged'), 0: t('noConnection'),
  }[error.status];
  // The line and the field are named in the page's words; the message is the server's, in
  // the page's language (the API answers in it).
  const items = (problem.errors || []).map((e) => {
    const line = e.index !== undefined && e.index !== null && lines[e.index] ? `${lines[e.index]}: ` : '';
    return el('li', {}, `${line}${fieldWord(e.field)} – `, serverWords(el('span', {}, e.message)));
  });
  return el('div', { class: 'problem', role: 'alert' },
    el('strong', {}, lead || problem.title || t('failed')),
    problem.detail ? serverWords(el('p', {}, problem.detail)) : null,
    items.length ? el('ul', {}, items) : null);
}

/** A quantity input of a line: whole numbers from 0 to max. */
function quantityInput(item, value, max) {
  return el('input', { type: 'number', min: '0', max: String(max), step: '1', inputmode: 'numeric', value: String(value),
    class: 'qty', 'aria-label': t('lineQuantity', { line: lineName(item) }), 'data-line': item.id });
}

/** The quantity typed, or null when it is not a whole number from 0 to max. */
function quantityOf(input) {
  const text = input.value.trim();
  if (!/^\d+$/.test(text)) return null;
  const n = Number(text);
  return n <= Number(input.max) ? n : null;
}

/** A step's form: a title, what it does, its controls, the button and a place for errors. */
function stepForm(name, title, hint, controls, button, submit) {
  const slot = el('div', { class: 'error-slot', 'aria-live': 'polite' });
  const form = el('form', { class: 'step-form', 'data-step': name, novalidate: true },
    el('h3', {}, title), hint ? el('p', { class: 'hint' }, hint) : null, ...controls, slot, button);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    button.disabled = true;
    slot.replaceChildren();
    try {
      await submit((message) => { throw Object.assign(new Error(message), { local: true }); });
    } catch (error) {
      slot.replaceChildren(error.local ? el('div', { class: 'problem', role: 'alert' }, el('p', {}, error.message)) : problemSentences(error, form.lineNames || []));
      button.disabled = false;
    }
  });
  return form;
}

/** The table of lines a shipping or return form asks quantities for. */
function quantityTable(rows, heads) {
  return el('div', { class: 'table-wrap' }, el('table', { class: 'lines' },
    el('thead', {}, el('tr', {}, heads.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows)));
}

function productCells(item) {
  const v = item.orderItem_variant || {};
  return [
    el('td', { class: 'product' }, el('strong', {}, titleOf(item)), el('div', { class: 'muted' }, [v.colour, v.size].filter(Boolean).join(' · '))),
    el('td', { class: 'mono', 'data-label': t('barcode') }, v.barcode || ''),
  ];
}

/** A cell of a lines table that names itself where the table is shown as a list (phones). */
const cell = (label, content, attrs = {}) => el('td', { class: 'num', 'data-label': label, ...attrs }, content);

/** The forms of the steps the user may take on this order now. */
function stepForms(lc, order, items, act) {
  const forms = [];
  const open = items.filter((i) => i.status === 'ACC');
  for (const s of act.steps) {
    if (s.step === 'acknowledgement') {
      const choices = items.map((item) => {
        const decision = el('select', { 'data-line': item.id },
          el('option', { value: 'ACC' }, t('acceptLine')), el('option', { value: 'REJ' }, t('rejectLine')));
        const reason = el('select', { 'data-line': item.id, disabled: true },
          el('option', { value: '' }, t('noReason')),
          lc.reasons.codes.map((r) => el('option', { value: r.code }, reasonWord(lc, r.code))));
        const set = el('fieldset', { class: 'line-choice', 'data-line': item.id },
          el('legend', {}, lineName(item), el('span', { class: 'muted' }, ` · ${t('orderedQty', { count: number(item.orderQty) })}`)),
          el('div', { class: 'row' }, field(t('decision'), decision), field(t('reason'), reason)));
        return { item, decision, reason, set };
      });
      const button = el('button', { type: 'submit' }, t('accept'));
      const update = () => {
        for (const c of choices) {
          c.reason.disabled = c.decision.value !== 'REJ';
          if (c.reason.disabled) c.reason.value = '';
        }
        const all = choices.every((c) => c.decision.value === 'REJ');
        button.textContent = all ? t('rejectOrder') : t('accept');
        button.className = all ? 'danger' : '';
      };
      choices.forEach((c) => c.decision.addEventListener('change', update));
      const form = stepForm(s.step, t('acceptTitle'), t('acceptHint'), choices.map((c) => c.set), button, async (refuse) => {
        const unexplained = choices.find((c) => c.decision.value === 'REJ' && !c.reason.value);
        if (unexplained) refuse(t('chooseReason', { line: lineName(unexplained.item) }));
        const all = choices.every((c) => c.decision.value === 'REJ');
        const to = all ? 'rejected' : 'accepted';
        await act.send(s, {
          status: s.to.includes(to) ? to : s.to[0],
          order_orderItem: choices.map((c) => c.decision.value === 'REJ'
            ? { id: c.item.id, status: 'REJ', detail: { reason: c.reason.value } }
            : { id: c.item.id, status: 'ACC' }),
        });
      });
      form.lineNames = choices.map((c) => lineName(c.item));
      forms.push(form);
    } else if (s.step === 'dispatch') {
      const lines = open.map((item) => ({ item, left: item.orderQty - (item.shipQty || 0) })).filter((l) => l.left > 0);
      lines.forEach((l) => { l.input = quantityInput(l.item, l.left, l.left); });
      const carrier = el('input', { type: 'text', autocomplete: 'off', value: order.carrier || '' });
      const tracking = el('input', { type: 'text', autocomplete: 'off' });
      const button = el('button', { type: 'submit' }, t('ship'));
      const form = stepForm(s.step, t('shipTitle'), t('shipHint'), [
        quantityTable(lines.map((l) => el('tr', { 'data-line': l.item.id }, ...productCells(l.item),
          cell(t('ordered'), number(l.item.orderQty)), cell(t('shippedQty'), number(l.item.shipQty || 0)),
          el('td', { class: 'qty-cell', 'data-label': t('toShipNow') }, l.input))),
        [t('product'), t('barcode'), t('ordered'), t('shippedQty'), t('toShipNow')]),
        el('div', { class: 'row' }, field(t('carrier'), carrier), field(t('trackingNumber'), tracking)),
      ], button, async (refuse) => {
        const asked = lines.map((l) => ({ ...l, now: quantityOf(l.input) }));
        const bad = asked.find((l) => l.now === null);
        if (bad) refuse(t('quantityRange', { line: lineName(bad.item), max: number(bad.left) }));
        const shipping = asked.filter((l) => l.now > 0);
        if (!shipping.length) refuse(t('shipNothing'));
        const full = asked.every((l) => l.now === l.left);
        await act.send(s, {
          status: full ? 'dispatched' : 'partDispatched',
          carrier: carrier.value.trim(),
          trackingRef: tracking.value.trim(),
          order_orderItem: shipping.map((l) => ({ id: l.item.id, shipQty: (l.item.shipQty || 0) + l.now })),
        });
      });
      form.lineNames = lines.map((l) => lineName(l.item));
      forms.push(form);
    } else if (s.step === 'delivery') {
      const button = el('button', { type: 'submit' }, t('deliver'));
      forms.push(stepForm(s.step, t('deliverTitle'), t('deliverHint'), [], button, () => act.send(s, { status: s.to[0] })));
    } else if (s.step === 'return') {
      const lines = items.map((item) => ({ item, left: (item.shipQty || 0) - (item.returnQty || 0) })).filter((l) => l.left > 0);
      if (!lines.length) continue;
      lines.forEach((l) => { l.input = quantityInput(l.item, 0, l.left); });
      const button = el('button', { type: 'submit' }, t('return'));
      const form = stepForm(s.step, t('returnTitle'), t('returnHint'), [
        quantityTable(lines.map((l) => el('tr', { 'data-line': l.item.id }, ...productCells(l.item),
          cell(t('shippedQty'), number(l.item.shipQty || 0)), cell(t('returnedQty'), number(l.item.returnQty || 0)),
          el('td', { class: 'qty-cell', 'data-label': t('returnedNow') }, l.input))),
        [t('product'), t('barcode'), t('shippedQty'), t('returnedQty'), t('returnedNow')]),
      ], button, async (refuse) => {
        const asked = lines.map((l) => ({ ...l, now: quantityOf(l.input) }));
        const bad = asked.find((l) => l.now === null);
        if (bad) refuse(t('quantityRange', { line: lineName(bad.item), max: number(bad.left) }));
        const back = asked.filter((l) => l.now > 0);
        if (!back.length) refuse(t('returnNothing'));
        await act.send(s, {
          status: s.to[0],
          order_orderItem: back.map((l) => ({ id: l.item.id, returnQty: (l.item.returnQty || 0) + l.now })),
        });
      });
      form.lineNames = lines.map((l) => lineName(l.item));
      forms.push(form);
    } else if (s.step === 'cancellation') {
      const button = el('button', { type: 'submit', class: 'danger' }, t('cancelOrder'));
      const form = stepForm(s.step, t('cancelTitle'), t('cancelHint'), [], button, async () => {
        // Confirmed first: the button asks, the answer does it.
        const yes = el('button', { type: 'button', class: 'danger' }, t('cancelYes'));
        const no = el('button', { type: 'button', class: 'secondary' }, t('cancelNo'));
        const slot = el('div', { class: 'error-slot', 'aria-live': 'polite' });
        const confirm = el('div', { class: 'confirm', role: 'alertdialog', 'aria-label': t('cancelConfirm', { ref: order.brandOrderRef || order.id }) },
          el('p', {}, el('strong', {}, t('cancelConfirm', { ref: order.brandOrderRef || order.id }))),
          el('p', {}, t('cancelHint')), slot, el('div', { class: 'actions' }, yes, no));
        no.addEventListener('click', () => { confirm.replaceWith(form); button.disabled = false; button.focus(); });
        yes.addEventListener('click', async () => {
          yes.disabled = true;
          slot.replaceChildren();
          try { await act.send(s, { status: s.to[0] }); } catch (error) { slot.replaceChildren(problemSentences(error, [])); yes.disabled = false; }
        });
        form.replaceWith(confirm);
        yes.focus();
      });
      forms.push(form);
    }
  }
  return forms;
}

/** The names of countries in each language, made once: making one costs far more than
 * asking it. */
const regionNames = new Map();

/** A country's name in the user's language from its ISO code (the code where there is none). */
function countryName(code) {
  if (!code) return '';
  try {
    let names = regionNames.get(locale());
    if (!names) {
      names = new Intl.DisplayNames([locale()], { type: 'region' });
      regionNames.set(locale(), names);
    }
    return names.of(code) || code;
  } catch { return code; }
}

function addressBlock(address) {
  if (!address) return el('p', { class: 'muted' }, t('noAddress'));
  const a = address;
  const lines = [
    [a.title, a.forename, a.surname].filter(Boolean).join(' '),
    a.company, a.line1, a.line2,
    [a.postcode, a.town].filter(Boolean).join(' '),
    // The country in the reader's language where its code says which (a country's name in the
    // address is the host's words, in the host's language).
    a.county, (a.countryCode && countryName(a.countryCode)) || a.country,
  ].filter(Boolean);
  return el('div', {},
    el('address', { class: 'ship-to' }, lines.map((l, i) => [i ? el('br') : null, l])),
    a.phone || a.email ? el('p', { class: 'muted contact' }, [a.phone, a.email].filter(Boolean).join(' · ')) : null);
}

function facts(entries) {
  return el('dl', { class: 'record' }, entries.filter(([, v]) => v !== '' && v !== null && v !== undefined)
    .flatMap(([k, v, attrs]) => [el('dt', {}, k), el('dd', attrs || {}, v)]));
}

async function one(resource, id, fields, may) {
  if (!id || !may(resource, 'GET')) return null;
  try { return records(await api(`/${resource}/${encodeURIComponent(id)}?fields=${fields}`), resource)[0] || null; } catch { return null; }
}

async function renderOrder(main, id, context, notice) {
  const { me, may } = context;
  const lc = await orderLifecycle();
  const order = records(await api(`/order/${encodeURIComponent(id)}`), 'order')[0];
  // Each line with its variant and product whole, also where the answer gave a reference.
  const full = keyed(order);
  const items = (order.order_orderItem || []).map((item) => {
    const variant = full(item.orderItem_variant);
    return { ...item, orderItem_variant: { ...variant, variant_product: full(variant.variant_product) } };
  });
  const bs = order.order_brandStore || {};
  const [brand, store, warehouse] = await Promise.all([
    one('brand', bs.fk_brand, 'name', may),
    one('store', bs.fk_store, 'name,store_host.name', may),
    one('warehouse', order.fk_warehouse, 'name', may),
  ]);
  const ref = order.brandOrderRef || order.hostOrderRef || order.id;
  const currency = items.map((i) => i.currency).find(Boolean) || '';
  const d = order.detail || {};
  const moneyShown = 'gross' in d;
  const lineMoney = items.some((i) => 'lineGross' in i);

  const steps = may('order', 'PATCH') ? stepsFor(lc, me.type, order.status) : [];
  const act = {
    steps,
    async send(s, body) {
      await api(`/order/${encodeURIComponent(order.id)}`, { method: 'PATCH', json: body });
      const after = records(await api(`/order/${encodeURIComponent(order.id)}?fields=status`), 'order')[0];
      await renderOrder(main, id, context, t('nowStatus', { status: statusWord(lc, after.status) }));
    },
  };
  const forms = stepForms(lc, order, items, act);

  const itemHead = [t('product'), t('barcode'), t('ordered'), t('shippedQty'), t('returnedQty'), t('status'),
    ...(lineMoney ? [t('price'), t('lineTotal')] : [])];
  const itemRows = items.map((item) => el('tr', { 'data-line': item.id },
    ...productCells(item),
    cell(t('ordered'), number(item.orderQty)),
    cell(t('shippedQty'), number(item.shipQty || 0)),
    cell(t('returnedQty'), number(item.returnQty || 0)),
    el('td', { 'data-label': t('status') }, lineBadge(lc, item)),
    lineMoney ? cell(t('price'), money(item.itemPrice, item.currency), { 'data-money': '' }) : null,
    lineMoney ? cell(t('lineTotal'), money(item.lineGross, item.currency), { 'data-money': '' }) : null));

  const host = store && store.store_host ? store.store_host.name : '';
  main.replaceChildren(...[
    el('p', { class: 'back' }, el('a', { href: '#/orders' }, `← ${t('orders')}`)),
    el('div', { class: 'order-title' }, heading(t('orderTitle', { ref })), statusBadge(lc, order.status)),
    el('p', { class: 'muted' }, [
      order.hostOrderRef ? `${t('hostReference')} ${order.hostOrderRef}` : null,
      `${t('ordered')} ${dateTime(order.orderDate)}`,
      brand ? brand.name : null,
    ].filter(Boolean).join(' · ')),
    notice ? el('p', { class: 'notice', role: 'status', tabindex: '-1' }, notice) : null,
    el('div', { class: 'order-layout' },
      el('section', { class: 'card area-shipto' }, el('h2', {}, t('shipTo')), addressBlock(order.shipAddress),
        d.customerMessage ? el('div', { class: 'message' }, el('h3', {}, t('customerMessage')), el('p', {}, d.customerMessage)) : null),
      el('section', { class: 'card area-steps', 'aria-label': t('nextSteps') }, el('h2', {}, t('nextSteps')),
        forms.length ? forms : el('p', { class: 'muted' }, t('noActions'))),
      el('section', { class: 'card area-items' }, el('h2', {}, t('orderItems')), el('div', { class: 'table-wrap' }, el('table', { class: 'lines' },
        el('thead', {}, el('tr', {}, itemHead.map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, itemRows)))),
      el('section', { class: 'card area-facts' }, el('h2', {}, t('orderDetails')), facts([
        [t('brand'), brand ? brand.name : ''],
        [t('store'), store ? store.name : ''],
        [t('host'), host],
        [t('warehouse'), warehouse ? warehouse.name : ''],
        [t('hostReference'), order.hostOrderRef],
        [t('customerReference'), order.hostCustOrderRef],
        [t('status'), statusWord(lc, order.status)],
        [t('ordered'), dateTime(order.orderDate)],
        [t('sentToWarehouse'), dateTime(order.sentToWH)],
        [t('shipped'), dateTime(order.shipDate)],
        [t('carrier'), order.carrier],
        [t('trackingNumber'), order.trackingRef],
        [t('delivered'), dateTime(order.deliveryDate)],
        [t('hostCarrier'), d.hostCarrier],
        [t('hostStatus'), d.hostStatus],
        ...(moneyShown ? [
          [t('net'), money(d.net, currency), { 'data-money': '' }],
          [t('vat'), money(d.vat, currency), { 'data-money': '' }],
          [t('total'), money(d.gross, currency), { 'data-money': '' }],
          [t('shipping'), money(d.shippingGross, currency), { 'data-money': '' }],
        ] : []),
      ])))].filter(Boolean));
  // A User Timing mark: the order's page is whole (bench/portal.sh).
  performance.mark('order:drawn');
  // After a step, its outcome is where the eye (and a screen reader) goes.
  if (notice) main.querySelector('.notice').focus();
}
