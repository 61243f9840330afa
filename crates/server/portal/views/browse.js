// Browse: any resource the user may read, as a table derived from the OpenAPI description
// (itself derived from the catalog): paging, sorting by a column header, `@` filters, column
// choice, related records by their labels as links, a record's page, and export of the
// current query. Column headings, codes and amounts read as the description words them.
import { api, records, schema, download } from '../api.js';
import { t, number, language } from '../i18n.js';
import { el, field, heading, errorSlot, busy, problemBox } from '../ui.js';
import {
  schemaIn, relationTarget, toMany, titleOf, resourceNameIn, wordOf, keyed, labelFieldsOf,
  labelIn, shown,
} from '../describe.js';
import { editLink } from './setup.js';

const PAGE_SIZE = 25;

/** The resources the user may read, from the paths of the description. */
export async function resources(may) {
  const doc = await schema();
  return Object.keys(doc.paths).map((p) => /^\/api\/(\w+)$/.exec(p)).filter(Boolean).map((m) => m[1])
    .filter((r) => doc.paths[`/api/${r}`].get && may(r, 'GET'));
}

function isScalar(property) {
  const types = [].concat(property.type || []);
  return types.some((ty) => ['string', 'integer', 'number', 'boolean'].includes(ty)) ||
    (types.includes('array') && property.items && !property.items.$ref && !property.items.anyOf && property.items.type !== 'object');
}

const isId = (property) => /\[0-9A-F\]\{32\}/.test(property.pattern || '');
const visibleTo = (property, type) => !(property['x-hidden-from'] || []).includes(type);

/** The placeholders of a resource's display label, each as its alternatives. */
function labelParts(own) {
  const template = (own['x-brandhub-label'] || {}).template || '';
  return [...template.matchAll(/\{([^}]*)\}/g)].map((m) => m[1].split('|'));
}

/** The columns worked out for each resource, user type and language: they follow from
 * the description alone, which does not change while the page is open. */
const derivedColumns = new Map();

/**
 * The columns of a resource. Each has a key (stored with the user's choice), a title, a
 * `path` that filters and sorts it (null when it cannot), and `value(row, full)` giving the
 * cell's content. A to-one relation whose record's label has several parts is spread into a
 * column per part (a stock row's variant into product, colour, size and barcode); the
 * resource's own label parts come first. Worked out once per resource, user type and
 * language; each call has its own copies, whose `shown` the page changes.
 */
export async function columnsOf(resource, userType) {
  const key = `${resource}|${userType}|${language()}`;
  let derived = derivedColumns.get(key);
  if (!derived) {
    derived = deriveColumns(await schema(), resource, userType);
    derivedColumns.set(key, derived);
  }
  return derived.map((c) => ({ ...c }));
}

/** The columns of a resource from a loaded description (see columnsOf). */
function deriveColumns(doc, resource, userType) {
  const own = schemaIn(doc, resource);
  const properties = Object.entries(own.properties || {}).filter(([, p]) => visibleTo(p, userType));
  // A foreign key is shown as its relation: the related record by its label.
  const feedsRelation = (p) => Boolean(p['x-brandhub-relation'] && own.properties[p['x-brandhub-relation']]);
  const columns = [];
  for (const [name, property] of properties) {
    const target = relationTarget(property);
    if (target) {
      if (toMany(property)) continue;
      const theirs = schemaIn(doc, target);
      const parts = labelParts(theirs);
      const first = ((theirs['x-brandhub-label'] || {}).fields || [])[0];
      const sortPath = first ? `${name}.${first}` : null;
      if (parts.length < 2) {
        columns.push({ key: name, title: titleOf(property, name), path: sortPath, relation: target, shown: true, through: name,
          value: (row, full) => relationLink(doc, target, row[name], full) });
        continue;
      }
      for (const [index, alternatives] of parts.entries()) {
        const part = alternatives[0];
        const inner = theirs.properties[part];
        if (!inner) continue;
        const innerTarget = relationTarget(inner);
        // The part that names the related record itself (a store's name) is headed by the
        // relation's title ("Store"), not the field's ("Name"); a part that is a record of
        // its own (a variant's product) or a further detail (a colour) keeps its title.
        const title = index === 0 && !innerTarget ? titleOf(property, name) : titleOf(inner, part);
        let path = null;
        if (innerTarget) {
          const innerFirst = ((schemaIn(doc, innerTarget)['x-brandhub-label'] || {}).fields || [])[0];
          path = innerFirst ? `${name}.${part}.${innerFirst}` : null;
        } else if (isScalar(inner)) path = `${name}.${part}`;
        columns.push({ key: `${name}.${part}`, title, path, shown: true, through: name, relationTitle: titleOf(property, name),
          value: (row, full) => {
            const related = full(row[name]);
            if (!related) return '';
            if (innerTarget) return relationLink(doc, innerTarget, related[part], full);
            return shown(inner, related[part], related, full);
          } });
      }
      continue;
    }
    if (name === 'id' || feedsRelation(property)) continue;
    if (isScalar(property)) {
      columns.push({ key: name, title: titleOf(property, name), path: [].concat(property.type).includes('array') ? null : name,
        shown: !isId(property) && !property['x-brandhub-refers-to'], property,
        value: (row, full) => referred(property, row[name], full) || shown(property, row[name], row, full) });
    } else if ([].concat(property.type).includes('object') && property.properties) {
      for (const [inner, sub] of Object.entries(property.properties)) {
        if (!isScalar(sub) || !visibleTo(sub, userType)) continue;
        columns.push({ key: `${name}.${inner}`, title: titleOf(sub, inner), parentTitle: titleOf(property, name),
          path: `${name}.${inner}`, shown: false, property: sub,
          value: (row, full) => referred(sub, row[name] && row[name][inner], full) || shown(sub, row[name] && row[name][inner], row, full) });
      }
    }
  }
  // A title two columns share says whose it is ("Ship to · Town", "Bill to · Town").
  for (const c of columns) {
    if (c.parentTitle && columns.some((o) => o !== c && o.title === c.title)) c.title = `${c.parentTitle} · ${c.title}`;
  }
  // The record's own label first: the columns that name it; then its codes in words (a
  // status), which people scan for, so that they show without scrolling.
  const named = labelParts(own).map((alternatives) => alternatives[0]);
  const rank = (c) => {
    const i = named.indexOf(c.through || c.key);
    if (i >= 0) return i;
    return c.property && c.property['x-brandhub-words'] && !c.parentTitle ? 50 : 99;
  };
  const sorted = columns.map((c, i) => ({ ...c, order: i })).sort((a, b) => rank(a) - rank(b) || a.order - b.order);
  // What the row already shows is not shown twice at first (an offer's colour and its
  // variant's, its store and its brand store's): the chooser offers it, named by whose it
  // is. Nor is a currency that the amounts show with them.
  const currencies = new Set(columns.map((c) => c.property && c.property['x-brandhub-money'] && c.property['x-brandhub-money'].currency).filter(Boolean));
  const seen = new Set();
  for (const c of sorted) {
    if (c.relationTitle !== undefined || c.relation) {
      if (seen.has(c.title) && c.shown) {
        c.shown = false;
        if (c.relationTitle && c.relationTitle !== c.title) c.title = `${c.relationTitle} · ${c.title}`;
      }
    }
    if (c.shown) seen.add(c.title);
    if (currencies.has(c.key) && !c.through) c.shown = false;
  }
  return sorted;
}

/** Labels of records named by ids that are not foreign keys (x-brandhub-refers-to), fetched
 * once per page and kept here by id. */
const referredLabels = new Map();

function referred(property, value, full) {
  const target = property && property['x-brandhub-refers-to'];
  if (!target || value === null || value === undefined || value === '') return null;
  const ids = [].concat(value).filter(Boolean);
  if (!ids.length) return null;
  return ids.map((id, i) => [i ? ', ' : '', el('a', { href: `#/browse/${target}/${id}` }, referredLabels.get(id) || t('openRecord'))]);
}

/** Fetches the labels of every record the rows name by such ids: one call per resource
 * named, all at once. */
async function fetchReferred(rows, columns, may) {
  const wanted = new Map();
  for (const c of columns) {
    const target = c.property && c.property['x-brandhub-refers-to'];
    if (!target) continue;
    for (const row of rows) {
      const value = c.key.split('.').reduce((v, k) => (v && typeof v === 'object' ? v[k] : undefined), row);
      for (const id of [].concat(value || []).filter(Boolean)) {
        if (!referredLabels.has(id)) (wanted.get(target) || wanted.set(target, new Set()).get(target)).add(id);
      }
    }
  }
  if (!wanted.size) return;
  const doc = await schema();
  await Promise.all([...wanted].filter(([target]) => may(target, 'GET')).map(async ([target, ids]) => {
    const q = new URLSearchParams();
    ids.forEach((id) => q.append('id', id));
    q.set('fields', ((schemaIn(doc, target)['x-brandhub-label'] || {}).fields || []).join(',') || 'id');
    q.set('pageSize', '1000');
    try {
      const answer = await api(`/${target}?${q}`);
      const full = keyed(answer);
      for (const record of records(answer, target)) referredLabels.set(record.id, labelIn(doc, target, record, full));
    } catch { /* labels stay unknown: the link still opens the record */ }
  }));
}

/** A related record as a link named by its label (`doc`: the loaded description). */
function relationLink(doc, target, value, full, skipId) {
  const record = full(value);
  const id = record && (record.id || record.__KEY);
  if (!id) return '';
  const label = labelIn(doc, target, record, full, skipId);
  return el('a', { href: `#/browse/${target}/${id}` }, label || t('openRecord'));
}

function chosenKey(resource) { return `brandhub.columns.${resource}`; }

function hashFor(resource, params) {
  const text = params.toString();
  return `#/browse/${resource}${text ? '?' + text : ''}`;
}

/** Reads a page with the labels of its related records. A relation the user may not follow
 * (the API names it in its 400) is left to show as a link without its label. */
async function withLabels(path, resource, params) {
  let extra = await labelFieldsOf(resource);
  const q = new URLSearchParams(params);
  if (q.has('fields')) extra = [];
  for (let tries = 0; extra.length && tries < 8; tries++) {
    q.set('fields', ['*', ...extra].join(','));
    try { return await api(`${path}?${q}`); } catch (error) {
      if (error.status !== 400) throw error;
      // The item the API names, relative to where it failed: every item of its relation goes.
      const named = String((error.problem && error.problem.field) || '');
      const top = (item) => item.split('.')[0];
      const gone = new Set(extra.filter((item) => item === named || item.endsWith('.' + named)).map(top));
      const left = extra.filter((item) => !gone.has(top(item)));
      extra = left.length < extra.length ? left : [];
    }
  }
  if (!extra.length) q.delete('fields');
  return api(`${path}?${q}`);
}

export async function render(main, context) {
  const { parts, query, may, me } = context;
  const list = await resources(may);
  const resource = list.includes(parts[0]) ? parts[0] : (list.includes('stock') ? 'stock' : list[0]);
  if (parts[1]) return renderRecord(main, resource, parts[1], context);
  // The page is asked for first, and the rest of the page made while it is on its way.
  const params = new URLSearchParams(query);
  const page = Math.max(1, Number(params.get('page')) || 1);
  const apiQuery = new URLSearchParams(params);
  // A page size in the address (#/browse/stock?pageSize=100) is kept; 25 otherwise.
  const asked = Number(params.get('pageSize'));
  apiQuery.set('pageSize', Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : PAGE_SIZE);
  apiQuery.set('page', page);
  const answering = withLabels(`/${resource}`, resource, apiQuery);
  // User Timing marks: how long the page takes to show an answer (bench/portal.sh). A
  // failure is shown where the table would be, once the page is made (below).
  answering.then(() => performance.mark('browse:answered'), () => {});
  const doc = await schema();
  const columns = await columnsOf(resource, me.type);
  const stored = JSON.parse(sessionStorage.getItem(chosenKey(resource)) || 'null');
  if (stored) for (const c of columns) c.shown = stored.includes(c.key);
  const names = list.map((r) => resourceNameIn(doc, r));
  const title = names[list.indexOf(resource)];

  const picker = el('select', { id: 'resource' }, list.map((r, i) => el('option', { value: r, selected: r === resource }, names[i])));
  picker.addEventListener('change', () => { location.hash = `#/browse/${picker.value}`; });

  // Filters: every parameter that is not paging or ordering.
  const filters = [...params.entries()].filter(([k]) => !['page', 'order_by', 'pageSize'].includes(k));
  const titleOfPath = (path) => (columns.find((c) => c.path === path) || {}).title || path;
  const fieldSelect = el('select', {}, columns.filter((c) => c.path).map((c) => el('option', { value: c.path }, c.title)));
  const valueInput = el('input', { type: 'text', placeholder: 'ABC@' });
  const addButton = el('button', { type: 'submit' }, t('addFilter'));
  const filterForm = el('form', { class: 'filter-form' }, field(t('field'), fieldSelect), field(t('value'), valueInput), addButton);
  filterForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = new URLSearchParams(params);
    next.append(fieldSelect.value, valueInput.value);
    next.delete('page');
    location.hash = hashFor(resource, next);
  });
  const chips = el('ul', { class: 'chips', 'aria-label': t('filters') }, filters.map(([k, v], index) => {
    const column = columns.find((c) => c.path === k);
    const value = column && column.property ? wordOf(column.property, v) : v;
    const remove = el('button', { type: 'button', class: 'chip-remove', 'aria-label': `${t('removeFilter')} ${titleOfPath(k)}: ${value}` }, '×');
    remove.addEventListener('click', () => {
      const next = new URLSearchParams();
      filters.forEach(([fk, fv], i) => { if (i !== index) next.append(fk, fv); });
      if (params.get('order_by')) next.set('order_by', params.get('order_by'));
      location.hash = hashFor(resource, next);
    });
    return el('li', { class: 'chip', 'data-filter': `${k}=${v}` }, el('span', {}, `${titleOfPath(k)}: ${value}`), remove);
  }));

  // Column choice.
  const chooser = el('details', { class: 'columns-chooser' }, el('summary', {}, t('columns')),
    el('div', { class: 'column-list' }, columns.map((c) => {
      const box = el('input', { type: 'checkbox', checked: c.shown });
      box.addEventListener('change', () => {
        c.shown = box.checked;
        sessionStorage.setItem(chosenKey(resource), JSON.stringify(columns.filter((x) => x.shown).map((x) => x.key)));
        drawTable();
      });
      return el('label', { class: 'check' }, box, c.title);
    })));

  const slot = errorSlot();
  const exportButton = el('button', { type: 'button', class: 'secondary' }, t('export'));
  exportButton.addEventListener('click', () => busy(exportButton, slot, async () => {
    const q = new URLSearchParams(filters);
    if (params.get('order_by')) q.set('order_by', params.get('order_by'));
    q.set('format', 'csv');
    await download(`/${resource}?${q}`, `${resource}.csv`);
  }));

  let answer;
  const tableHolder = el('div', { class: 'table-wrap' });
  const summary = el('p', { class: 'muted', role: 'status' });
  const pager = el('div', { class: 'pager' });
  try {
    answer = await answering;
  } catch (error) {
    tableHolder.append(problemBox(error));
  }
  const rows = records(answer, resource);
  const full = keyed(answer);
  await fetchReferred(rows, columns, may);
  const order = params.get('order_by') || '';

  /** The table of the answer's rows in the columns shown, made whole before it goes into
   * the page. Its rows are grids of one column template (see app.css, `table.grid`): each
   * column as wide as its longest value (in characters, up to the cells' 28), so no row has
   * to be measured against the others, and the rows out of view are laid out only when
   * scrolled to. */
  function drawTable() {
    if (!answer) return;
    const visible = columns.filter((c) => c.shown);
    const sorted = new URLSearchParams(params);
    sorted.delete('page');
    const headerCells = visible.map((c) => {
      if (!c.path) return el('th', { scope: 'col', role: 'columnheader' }, c.title);
      const ascending = order === c.path || order === `${c.path}>`;
      const descending = order === `${c.path}<`;
      sorted.set('order_by', ascending ? `${c.path}<` : c.path);
      return el('th', { scope: 'col', role: 'columnheader', 'aria-sort': ascending ? 'ascending' : descending ? 'descending' : 'none' },
        el('a', { href: hashFor(resource, sorted), class: 'sort', 'aria-label': t('sortBy', { field: c.title }) }, c.title, ascending ? ' ▲' : descending ? ' ▼' : ''));
    });
    const numeric = visible.map((c) => Boolean(c.property && [].concat(c.property.type).some((ty) => ty === 'number' || ty === 'integer')));
    // A heading wraps between its words; a sorted one has room for its arrow.
    const widths = visible.map((c) => Math.max(4, ...c.title.split(/\s+/).map((word) => word.length)) + (c.path ? 3 : 1));
    // Every row is a copy of one made once, its cells then filled.
    const template = el('tr', { role: 'row' }, visible.map((c, i) => el('td', { role: 'cell', class: numeric[i] ? 'num' : null })));
    const body = el('tbody', { role: 'rowgroup' });
    for (const r of rows) {
      const tr = template.cloneNode(true);
      let cell = tr.firstChild;
      for (const [i, c] of visible.entries()) {
        let content = c.value(r, full) ?? '';
        const text = typeof content === 'object' ? content.textContent : String(content);
        // The first column opens the row's own record, named by what the cell would show.
        if (i === 0) content = el('a', { href: `#/browse/${resource}/${r.id}`, class: 'row-link' }, text || t('openRecord'));
        if (text.length > widths[i]) widths[i] = text.length;
        cell.append(content);
        cell = cell.nextSibling;
      }
      body.append(tr);
    }
    if (!rows.length) body.append(el('tr', { role: 'row', class: 'empty' }, el('td', { role: 'cell', class: 'muted' }, t('noRecords'))));
    const table = el('table', { class: 'grid', role: 'table' },
      el('thead', { role: 'rowgroup' }, el('tr', { role: 'row' }, headerCells)), body);
    const tracks = widths.map((w) => `calc(${Math.min(w, 28)}ch + 1.5rem)`);
    table.style.setProperty('--columns', tracks.map((w) => `minmax(${w}, 1fr)`).join(' '));
    table.style.setProperty('--least', `calc(${tracks.join(' + ')})`);
    tableHolder.replaceChildren(table);
  }
  drawTable();

  if (answer) {
    const info = answer.response;
    summary.textContent = `${t('recordsFound', { count: number(info.recordsFound) })} · ${t('pageOf', { page: number(info.page), pages: number(Math.max(1, info.pageCount)) })}`;
    const go = (p) => { const next = new URLSearchParams(params); next.set('page', p); return hashFor(resource, next); };
    const prev = el('button', { type: 'button', class: 'secondary', disabled: page <= 1 }, t('previousPage'));
    const nextButton = el('button', { type: 'button', class: 'secondary', disabled: page >= info.pageCount }, t('nextPage'));
    prev.addEventListener('click', () => { location.hash = go(page - 1); });
    nextButton.addEventListener('click', () => { location.hash = go(page + 1); });
    pager.append(prev, nextButton);
  }

  main.replaceChildren(
    heading(title),
    el('div', { class: 'toolbar' }, field(t('resource'), picker), chooser, exportButton),
    slot,
    el('section', { class: 'filters', 'aria-label': t('filters') }, filterForm, el('small', { class: 'hint' }, t('filterHint')), chips),
    summary, tableHolder, pager);
  performance.mark('browse:rendered');
}

/** A record's properties as a list of titles and values: its own values and the records it
 * points to first (those by label, as links), then its objects (nested), then the records
 * under it (a list of links). */
function definitionList(doc, object, own, full, me, parentId, root = object) {
  const groups = [[], [], []];
  for (const [key, property] of Object.entries(own.properties || {})) {
    if (!(key in object) || key === 'id' || !visibleTo(property, me.type)) continue;
    // A foreign key is shown as its relation: the related record by its label.
    if (property['x-brandhub-relation'] && own.properties[property['x-brandhub-relation']]) continue;
    const value = object[key];
    const target = relationTarget(property);
    let content;
    let group = 0;
    if (target && toMany(property)) {
      const items = [];
      for (const item of value || []) items.push(el('li', {}, relationLink(doc, target, item, full, parentId)));
      content = items.length ? el('ul', { class: 'related-list' }, items) : '';
      group = 2;
    } else if (target) {
      content = relationLink(doc, target, value, full);
    } else if (value && typeof value === 'object' && !Array.isArray(value)) {
      content = definitionList(doc, value, property, full, me, parentId, root);
      if (!content.children.length) content = '';
      group = 1;
    } else {
      content = referred(property, value, full) || shown(property, value, root, full);
    }
    groups[group].push(el('dt', {}, titleOf(property, key)), el('dd', {}, content === '' ? t('none') : content));
  }
  return el('dl', { class: 'record' }, groups.flat());
}

async function renderRecord(main, resource, id, { may, me }) {
  const doc = await schema();
  const own = schemaIn(doc, resource);
  const answer = await withLabels(`/${resource}/${encodeURIComponent(id)}`, resource, new URLSearchParams());
  const record = records(answer, resource)[0];
  const full = keyed(answer);
  const columns = await columnsOf(resource, me.type);
  await fetchReferred([record], columns.concat(Object.entries(own.properties || {})
    .filter(([, p]) => p['x-brandhub-refers-to']).map(([k, p]) => ({ key: k, property: p }))), may);
  const list = definitionList(doc, record, own, full, me, record.id);
  const label = labelIn(doc, resource, record, full);
  // A record that moves through a lifecycle (an order) is worked on its own page.
  const worked = own['x-brandhub-lifecycle']
    ? el('p', {}, el('a', { href: `#/orders/o/${record.id}` }, t('workOrder'))) : null;
  // A part the record has not (a lifecycle, a right to change it) is left out, not shown
  // as "null".
  main.replaceChildren(...[
    el('p', {}, el('a', { href: `#/browse/${resource}` }, `← ${t('back')}: ${resourceNameIn(doc, resource)}`)),
    heading(`${resourceNameIn(doc, resource, false)}: ${label || t('openRecord')}`),
    worked,
    await editLink(resource, record.id, may),
    el('section', { class: 'card' }, list)].filter(Boolean));
}
