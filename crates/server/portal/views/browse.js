// Browse: any resource the user may read, as a table derived from the OpenAPI description
// (itself derived from the catalog): paging, sorting by a column header, `@` filters, column
// choice, related records as links, a record's page, and export of the current query.
import { api, records, schema, download } from '../api.js';
import { t, number, display } from '../i18n.js';
import { el, field, heading, errorSlot, busy, problemBox } from '../ui.js';
import { editLink } from './setup.js';

const PAGE_SIZE = 25;
const LABELS = ['name', 'title', 'code', 'brandOrderRef', 'barcode', 'email', 'fileName', 'hostOrderRef'];

const schemaName = (resource) => resource[0].toUpperCase() + resource.slice(1);
const resourceOf = (ref) => { const name = ref.split('/').pop(); return name[0].toLowerCase() + name.slice(1); };

/** The resources the user may read, from the paths of the description. */
export async function resources(may) {
  const doc = await schema();
  return Object.keys(doc.paths).map((p) => /^\/api\/(\w+)$/.exec(p)).filter(Boolean).map((m) => m[1])
    .filter((r) => doc.paths[`/api/${r}`].get && may(r, 'GET'));
}

function relationTarget(property) {
  const ref = (property.oneOf || []).map((o) => o.$ref).find((r) => r && !r.endsWith('/Key'));
  return ref ? resourceOf(ref) : null;
}

function isScalar(property) {
  const types = [].concat(property.type || []);
  return types.some((t) => ['string', 'integer', 'number', 'boolean'].includes(t)) ||
    (types.includes('array') && property.items && !property.items.$ref && property.items.type !== 'object');
}

/** The columns of a resource: scalars, one level of objects, and to-one relations. */
export async function columnsOf(resource) {
  const doc = await schema();
  const properties = (doc.components.schemas[schemaName(resource)] || {}).properties || {};
  const columns = [];
  for (const [name, property] of Object.entries(properties).sort(([a], [b]) => a.localeCompare(b))) {
    const target = relationTarget(property);
    if (target) columns.push({ name, relation: target, sortable: false, shown: true });
    else if (isScalar(property)) columns.push({ name, sortable: ![].concat(property.type).includes('array'), shown: name !== 'id' && !name.startsWith('fk_') });
    else if (property.type === 'object' && property.properties) {
      for (const [inner, sub] of Object.entries(property.properties)) {
        if (isScalar(sub)) columns.push({ name: `${name}.${inner}`, sortable: false, shown: false });
      }
    }
  }
  // Identity first: the fields that name a record.
  const rank = (c) => { const i = LABELS.indexOf(c.name); return i < 0 ? 99 : i; };
  return columns.sort((a, b) => rank(a) - rank(b));
}

export function valueAt(record, path) {
  return path.split('.').reduce((v, key) => (v && typeof v === 'object' ? v[key] : undefined), record);
}

function labelOf(record) {
  if (!record || typeof record !== 'object') return '';
  for (const key of LABELS) if (record[key]) return String(record[key]);
  return record.id || record.__KEY || '';
}

function cell(record, column) {
  const value = valueAt(record, column.name);
  if (column.relation) {
    const id = value && (value.id || value.__KEY);
    if (!id) return el('td');
    return el('td', {}, el('a', { href: `#/browse/${column.relation}/${id}` }, labelOf(value) || id.slice(0, 8)));
  }
  const td = el('td', { class: typeof value === 'number' ? 'num' : '' }, display(value));
  return td;
}

function chosenKey(resource) { return `brandhub.columns.${resource}`; }

function hashFor(resource, params) {
  const text = params.toString();
  return `#/browse/${resource}${text ? '?' + text : ''}`;
}

export async function render(main, context) {
  const { parts, query, may } = context;
  const list = await resources(may);
  const resource = list.includes(parts[0]) ? parts[0] : (list.includes('stock') ? 'stock' : list[0]);
  if (parts[1]) return renderRecord(main, resource, parts[1], may);
  const columns = await columnsOf(resource);
  const stored = JSON.parse(sessionStorage.getItem(chosenKey(resource)) || 'null');
  if (stored) for (const c of columns) c.shown = stored.includes(c.name);

  const picker = el('select', { id: 'resource' }, list.map((r) => el('option', { value: r, selected: r === resource }, r)));
  picker.addEventListener('change', () => { location.hash = `#/browse/${picker.value}`; });

  // Filters: every parameter that is not paging or ordering.
  const params = new URLSearchParams(query);
  const page = Math.max(1, Number(params.get('page')) || 1);
  const filters = [...params.entries()].filter(([k]) => !['page', 'order_by', 'pageSize'].includes(k));
  const fieldSelect = el('select', {}, columns.filter((c) => !c.relation).map((c) => el('option', { value: c.name }, c.name)));
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
    const remove = el('button', { type: 'button', class: 'chip-remove', 'aria-label': `${t('removeFilter')} ${k}=${v}` }, '×');
    remove.addEventListener('click', () => {
      const next = new URLSearchParams();
      filters.forEach(([fk, fv], i) => { if (i !== index) next.append(fk, fv); });
      if (params.get('order_by')) next.set('order_by', params.get('order_by'));
      location.hash = hashFor(resource, next);
    });
    return el('li', { class: 'chip' }, el('code', {}, `${k}=${v}`), remove);
  }));

  // Column choice.
  const chooser = el('details', { class: 'columns-chooser' }, el('summary', {}, t('columns')),
    el('div', { class: 'column-list' }, columns.map((c) => {
      const box = el('input', { type: 'checkbox', checked: c.shown });
      box.addEventListener('change', () => {
        c.shown = box.checked;
        sessionStorage.setItem(chosenKey(resource), JSON.stringify(columns.filter((x) => x.shown).map((x) => x.name)));
        drawTable();
      });
      return el('label', { class: 'check' }, box, c.name);
    })));

  const slot = errorSlot();
  const exportButton = el('button', { type: 'button', class: 'secondary' }, t('export'));
  exportButton.addEventListener('click', () => busy(exportButton, slot, async () => {
    const q = new URLSearchParams(filters);
    if (params.get('order_by')) q.set('order_by', params.get('order_by'));
    q.set('format', 'csv');
    await download(`/${resource}?${q}`, `${resource}.csv`);
  }));

  const apiQuery = new URLSearchParams(params);
  // A page size in the address (#/browse/stock?pageSize=100) is kept; 25 otherwise.
  const asked = Number(params.get('pageSize'));
  apiQuery.set('pageSize', Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : PAGE_SIZE);
  apiQuery.set('page', page);
  let answer;
  const tableHolder = el('div', { class: 'table-wrap' });
  const summary = el('p', { class: 'muted', role: 'status' });
  const pager = el('div', { class: 'pager' });
  try {
    answer = await api(`/${resource}?${apiQuery}`);
    // User Timing marks: how long the page takes to show an answer (bench/portal.sh).
    performance.mark('browse:answered');
  } catch (error) {
    tableHolder.append(problemBox(error));
  }
  const rows = records(answer, resource);
  const order = params.get('order_by') || '';

  function drawTable() {
    if (!answer) return;
    const shown = columns.filter((c) => c.shown);
    const headerCells = shown.map((c) => {
      if (!c.sortable) return el('th', { scope: 'col' }, c.name);
      const ascending = order === c.name || order === `${c.name}>`;
      const descending = order === `${c.name}<`;
      const next = new URLSearchParams(params);
      next.set('order_by', ascending ? `${c.name}<` : c.name);
      next.delete('page');
      return el('th', { scope: 'col', 'aria-sort': ascending ? 'ascending' : descending ? 'descending' : 'none' },
        el('a', { href: hashFor(resource, next), class: 'sort', 'aria-label': t('sortBy', { field: c.name }) }, c.name, ascending ? ' ▲' : descending ? ' ▼' : ''));
    });
    const body = rows.length
      ? rows.map((r) => el('tr', {}, shown.map((c, i) => {
        const td = cell(r, c);
        if (i === 0) td.replaceChildren(el('a', { href: `#/browse/${resource}/${r.id}` }, td.textContent || r.id.slice(0, 8)));
        return td;
      })))
      : [el('tr', {}, el('td', { colspan: shown.length || 1, class: 'muted' }, t('noRecords')))];
    tableHolder.replaceChildren(el('table', {}, el('thead', {}, el('tr', {}, headerCells)), el('tbody', {}, body)));
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
    heading(`${t('browse')}: ${resource}`),
    el('div', { class: 'toolbar' }, field(t('resource'), picker), chooser, exportButton),
    slot,
    el('section', { class: 'filters', 'aria-label': t('filters') }, filterForm, el('small', { class: 'hint' }, t('filterHint')), chips),
    summary, tableHolder, pager);
  performance.mark('browse:rendered');
}

function definitionList(object, columns) {
  const dl = el('dl', { class: 'record' });
  for (const [key, value] of Object.entries(object)) {
    if (key === '__KEY') continue;
    const column = columns && columns.find((c) => c.name === key);
    let shown;
    if (column && column.relation) {
      const id = value && (value.id || value.__KEY);
      shown = id ? el('a', { href: `#/browse/${column.relation}/${id}` }, labelOf(value) || id) : '';
    } else if (Array.isArray(value) && value.some((v) => v && typeof v === 'object')) {
      shown = el('ul', {}, value.map((v) => el('li', {}, labelOf(v) || JSON.stringify(v))));
    } else if (value && typeof value === 'object') {
      shown = definitionList(value);
    } else {
      shown = display(value);
    }
    dl.append(el('dt', {}, key), el('dd', {}, shown));
  }
  return dl;
}

async function renderRecord(main, resource, id, may) {
  const columns = await columnsOf(resource);
  const answer = await api(`/${resource}/${encodeURIComponent(id)}`);
  const record = records(answer, resource)[0];
  main.replaceChildren(
    el('p', {}, el('a', { href: `#/browse/${resource}` }, `← ${t('back')}: ${resource}`)),
    heading(`${resource}: ${labelOf(record) || id}`),
    await editLink(resource, record.id, may),
    el('section', { class: 'card' }, definitionList(record, columns)));
}
