// Files: upload a spreadsheet with its type and arguments picked from lists, drag and drop,
// processing followed through detail.rowsRead, status and warnings, the original file, the
// error report of skipped rows and the templates to download. The file types and their arguments come from the description
// of POST /api/file.
import { api, records, schema, download } from '../api.js';
import { t, has, number, dateTime, language } from '../i18n.js';
import { recordLabel } from './setup.js';
import { el, field, heading, errorSlot, busy, problemBox } from '../ui.js';

/** [{type, args: [{name, optional}], userTypes}] from the multipart description of POST
 * /api/file and its x-brandhub-uploads (which user types may upload each type). */
export async function fileTypes() {
  const doc = await schema();
  const post = doc.paths['/api/file'] && doc.paths['/api/file'].post;
  if (!post) return [];
  const who = Object.fromEntries((post['x-brandhub-uploads'] || []).map((u) => [u.fileType, u.userTypes]));
  const body = post.requestBody.content['multipart/form-data'].schema;
  const inner = /\(([^)]*)\)/.exec(body.description)[1];
  return inner.split('|').map((s) => s.trim()).map((spec) => {
    const [type] = spec.split(',');
    const args = [];
    const pattern = /(\[)?,<([^>]+)>/g;
    let m;
    while ((m = pattern.exec(spec))) args.push({ name: m[2], optional: Boolean(m[1]) });
    return { type, args, userTypes: who[type] || [] };
  });
}

async function options(resource) {
  const answer = await api(`/${resource}?pageSize=1000&fields=id,name,code&order_by=name`);
  return Promise.all(records(answer, resource).map(async (r) => ({ id: r.id, label: await recordLabel(resource, r) })));
}

/** A file type's word in the user's language. */
export const typeWord = (type) => (has(`fileType_${type}`) ? t(`fileType_${type}`) : type);

/** The kinds of things a file's warning says were not found, as the server names them. */
const NOUNS = { barcode: 'barcode', barcodes: 'barcode', 'product code': 'productCode', 'product codes': 'productCode',
  order: 'order', orders: 'order', 'order item': 'orderItem', 'order items': 'orderItem' };

/** A count with its noun in the user's language ("3 Barcodes", "1 Zeile"). */
const counted = (count, noun) => `${number(Number(count))} ${t(`noun_${noun}_${Number(count) === 1 ? 'one' : 'many'}`)}`;

/** A list the server cut short ("…, … and 4 more") in the user's language. */
const listWords = (list) => list.replace(/, … and (\d+) more$/, (_, n) => `, ${t('andMore', { count: number(Number(n)) })}`);

/**
 * A line of a file's warnings (`detail.error`, written by the server in English) in the user's
 * language where the portal knows its form: what was not found, which rows were skipped,
 * which columns ignored. What the file itself says (barcodes, column names) stays as it is;
 * a line of another form is shown as written.
 */
export function warningText(line) {
  if (language() === 'en') return line;
  let m = /^Warning: (\d+) (barcodes?|product codes?|orders?|order items?) not found: (.*)$/.exec(line);
  if (m) return t('warnNotFound', { what: counted(m[1], NOUNS[m[2]]), list: listWords(m[3]) });
  m = /^Warning: (\d+) rows? skipped: (.*)$/.exec(line);
  if (m) return t('warnSkipped', { what: counted(m[1], 'row'), list: listWords(m[2]).replace(/(^|, )row (\d+) \(/g, `$1${t('noun_row_one')} $2 (`) });
  m = /^Warning: (\d+) unknown columns? ignored: (.*)$/.exec(line);
  if (m) return t('warnIgnored', { what: counted(m[1], 'unknownColumn'), list: listWords(m[2]) });
  return line;
}

/** DD/MM/YYYY from a date input's YYYY-MM-DD. */
const contractDate = (value) => value.split('-').reverse().join('/');

/** The download of a processed file's skipped rows with their reasons, when it has any. */
function reportButton(file, slot) {
  if (!['processed', 'failed'].includes(file.status) || !(file.detail?.rowsSkipped > 0)) return null;
  const button = el('button', { type: 'button', class: 'link', 'data-report': file.id }, t('errorReport'));
  const stem = file.fileName.replace(/\.[^.]*$/, '');
  button.addEventListener('click', () => busy(button, slot, () => download(`/file/${file.id}/report`, `${stem}-errors.xlsx`)));
  return button;
}

function statusBlock(file) {
  const d = file.detail || {};
  const done = file.status === 'processed' || file.status === 'failed';
  const progress = el('progress', { max: '100', 'aria-label': t('status') });
  if (done) progress.value = 100;
  else if (d.rowsRead) progress.value = 60;
  const warnings = (d.error || '').split('\n').filter(Boolean);
  const slot = errorSlot();
  return el('div', { class: 'upload-status', 'data-status': file.status },
    el('p', {}, el('strong', {}, file.fileName), ' ', el('span', { class: `badge badge-${file.status}` }, t(`fileStatus_${file.status}`))),
    done ? null : progress,
    el('dl', { class: 'counts' },
      el('dt', {}, t('rowsRead')), el('dd', { 'data-count': 'rowsRead' }, number(d.rowsRead ?? 0)),
      el('dt', {}, t('rowsApplied')), el('dd', { 'data-count': 'rowsApplied' }, number(d.rowsApplied ?? 0)),
      el('dt', {}, t('rowsSkipped')), el('dd', { 'data-count': 'rowsSkipped' }, number(d.rowsSkipped ?? 0))),
    warnings.length ? el('div', { class: 'warnings' }, el('h3', {}, t('warnings')), el('ul', {}, warnings.map((w) => el('li', {}, warningText(w))))) : null,
    reportButton(file, slot), slot);
}

export async function render(main, { me, may }) {
  // Only the types this user may upload (a warehouse: stock and dispatch files).
  const types = (await fileTypes()).filter((ft) => me.uploads.includes(ft.type));
  const lists = {};
  const wanted = new Set(types.flatMap((ft) => ft.args.map((a) => a.name)));
  for (const name of ['brand', 'warehouse', 'host']) {
    if (wanted.has(name) && may(name, 'GET')) lists[name] = await options(name);
  }
  const typeSelect = el('select', { name: 'fileType' }, types.map((ft) => el('option', { value: ft.type }, typeWord(ft.type))));
  const argsHolder = el('div', { class: 'args' });
  let argControls = [];
  function drawArgs() {
    const ft = types.find((x) => x.type === typeSelect.value);
    let dates = 0;
    argControls = ft.args.map((arg) => {
      if (lists[arg.name]) {
        const select = el('select', { name: arg.name }, lists[arg.name].map((o) => el('option', { value: o.id }, o.label)));
        return { arg, control: select, wrap: field(t(arg.name), select) };
      }
      const input = el('input', { type: 'date', name: `date${dates}`, required: !arg.optional });
      dates += 1;
      return { arg, control: input, wrap: field(dates === 1 ? t('startDate') : t('endDate'), input), date: true };
    });
    argsHolder.replaceChildren(...argControls.map((a) => a.wrap));
  }
  typeSelect.addEventListener('change', drawArgs);
  drawArgs();

  // The browser's own file control speaks the browser's language, not the page's: it is
  // hidden from sight (kept for keyboards and screen readers) and the drop zone, a label of
  // it, is what one clicks.
  const fileInput = el('input', { type: 'file', accept: '.xlsx,.xlsm,.xls,.ods,.csv', id: 'file-input', class: 'file-input' });
  const chosen = el('span', { class: 'muted' });
  const drop = el('label', { class: 'dropzone', for: 'file-input' }, el('span', {}, t('dropHere')), chosen);
  let file = null;
  const choose = (f) => { file = f; chosen.textContent = f ? t('chosen', { name: f.name }) : ''; };
  fileInput.addEventListener('change', () => choose(fileInput.files[0]));
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => { e.preventDefault(); drop.classList.remove('over'); choose(e.dataTransfer.files[0]); });

  const button = el('button', { type: 'submit' }, t('upload'));
  const slot = errorSlot();
  const status = el('div', { 'aria-live': 'polite' });
  const form = el('form', { class: 'card upload' }, el('h2', {}, t('uploadTitle')),
    el('div', { class: 'row' }, field(t('fileType'), typeSelect), argsHolder),
    field(t('file'), fileInput), drop, slot, button, status);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      const args = argControls.filter((a) => a.control.value).map((a) => (a.date ? contractDate(a.control.value) : a.control.value));
      const name = [typeSelect.value, ...args].join(',');
      const body = new FormData();
      if (!file) throw { problem: { title: t('file'), detail: t('dropHere') } };
      body.append(name, file, file.name);
      let record = (await api('/file', { method: 'POST', body })).response.file[0];
      status.replaceChildren(statusBlock(record));
      while (record.status === 'pending' || record.status === 'processing') {
        await new Promise((r) => setTimeout(r, 400));
        record = records(await api(`/file/${record.id}`), 'file')[0];
        status.replaceChildren(statusBlock(record));
      }
      await drawRecent();
    });
  });

  const templates = el('section', { class: 'card' }, el('h2', {}, t('templates')), el('ul', { class: 'plain' }, types.map((ft) => {
    const b = el('button', { type: 'button', class: 'link' }, t('templateOf', { type: typeWord(ft.type) }));
    const s = errorSlot();
    b.addEventListener('click', () => busy(b, s, () => download(`/file/template/${ft.type}`, `${ft.type}.xlsx`)));
    return el('li', {}, b, s);
  })));

  const recent = el('section', { class: 'card' });
  async function drawRecent() {
    let list;
    try { list = records(await api('/file?order_by=createdDate<&pageSize=15'), 'file'); } catch (e) { recent.replaceChildren(problemBox(e)); return; }
    recent.replaceChildren(el('h2', {}, t('recentFiles')), el('div', { class: 'table-wrap' }, el('table', {},
      el('thead', {}, el('tr', {}, [t('file'), t('fileType'), t('status'), t('rowsRead'), t('rowsApplied'), t('rowsSkipped'), t('uploaded'), ''].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, list.map((f) => {
        const d = f.detail || {};
        const original = el('button', { type: 'button', class: 'link' }, t('original'));
        const s = errorSlot();
        original.addEventListener('click', () => busy(original, s, () => download(`/file/${f.id}/content`, f.fileName)));
        const report = reportButton(f, s);
        return el('tr', {},
          el('td', {}, el('a', { href: `#/browse/file/${f.id}` }, f.fileName), d.error ? el('div', { class: 'warn-text' }, warningText(d.error.split('\n')[0])) : null),
          el('td', {}, typeWord(f.fileType)), el('td', {}, el('span', { class: `badge badge-${f.status}` }, t(`fileStatus_${f.status}`))),
          el('td', { class: 'num' }, number(d.rowsRead ?? 0)), el('td', { class: 'num' }, number(d.rowsApplied ?? 0)), el('td', { class: 'num' }, number(d.rowsSkipped ?? 0)),
          el('td', {}, dateTime(f.createdDate)), el('td', { class: 'actions' }, original, report, s));
      })))));
  }
  await drawRecent();
  main.replaceChildren(heading(t('files')), el('div', { class: 'columns' }, form, templates), recent);
}
