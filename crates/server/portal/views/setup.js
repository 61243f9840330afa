// Setting up customers: a form to create or change a record of any resource the API lets the
// user write, generated from the API's own description of the write (the request body of
// POST /api/<resource> or PATCH /api/<resource>/<id>, derived from the catalog). Each field
// gets the control its type asks for; a link to another record (x-brandhub-link) is chosen
// from a searchable list of that resource's records, shown by name.
import { api, records, schema } from '../api.js';
import { t, has, languages, language } from '../i18n.js';
import { el, field, heading, errorSlot, busy } from '../ui.js';
import { labelOf, keyed, recordSchema } from '../describe.js';

const schemaName = (resource) => resource[0].toUpperCase() + resource.slice(1);

/** The word of a resource (its name when the language has none). */
export function resourceWord(resource) {
  return has(`res_${resource}`) ? t(`res_${resource}`) : humanize(resource);
}

/** A word with its first letter in upper case (a sentence starting with it). */
const capital = (word) => word.charAt(0).toUpperCase() + word.slice(1);

/** camelCase or fk_name → "Camel case", "Name": the last resort for a field without a word. */
function humanize(name) {
  const words = name.replace(/^fk_/, '').replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return words[0].toUpperCase() + words.slice(1);
}

/** The word of a field of a resource: its own (`fld_<resource>.<path>`), the shared one
 * (`fld_<path>`, then `fld_<last part>`), else the name made readable. */
export function fieldWord(resource, path) {
  const last = path.split('.').pop();
  for (const key of [`fld_${resource}.${path}`, `fld_${path}`, `fld_${last}`]) if (has(key)) return t(key);
  return humanize(last);
}

/** A word the description carries in each language ({en, de}), in the page's language. */
function described(words) {
  if (!words || typeof words !== 'object') return null;
  return words[document.documentElement.lang] || words.en || null;
}

/** The word of a field as the description titles it (x-brandhub-titles), else [`fieldWord`]. */
function titleOf(resource, path, s) {
  return described(s['x-brandhub-titles']) || fieldWord(resource, path);
}

/** The word of an allowed value of a field: the description's (x-brandhub-words), the
 * portal's (`val_<field>_<value>`), else the value. */
function valueWord(path, value, s = {}) {
  const given = described((s['x-brandhub-words'] || {})[value]);
  if (given) return given;
  const key = `val_${path.split('.').pop()}_${value}`;
  return has(key) ? t(key) : String(value);
}

/** The write body schema of an operation: POST on the list path, PATCH on the record's. */
async function bodySchema(resource, method) {
  const doc = await schema();
  const path = method === 'POST' ? `/api/${resource}` : `/api/${resource}/{id}`;
  const operation = doc.paths[path] && doc.paths[path][method.toLowerCase()];
  const content = operation && operation.requestBody && operation.requestBody.content['application/json'];
  return content ? content.schema : null;
}

/** The resources the user may create with a JSON write, in the description's order: those
 * with a JSON POST that is not an upload or an order intake (a lifecycle has forms of its
 * own). */
export async function creatable(may) {
  const doc = await schema();
  return Object.keys(doc.paths).map((p) => /^\/api\/(\w+)$/.exec(p)).filter(Boolean).map((m) => m[1])
    .filter((r) => {
      const post = doc.paths[`/api/${r}`].post;
      const record = doc.components.schemas[schemaName(r)] || {};
      return post && post.requestBody && post.requestBody.content['application/json'] &&
        !record['x-brandhub-lifecycle'] && may(r, 'POST');
    });
}

/** The leaf fields of a body schema as [{path, schema, required}], nested objects flattened. */
function leaves(body, prefix = '', required = body.required || []) {
  const out = [];
  for (const [name, property] of Object.entries(body.properties || {})) {
    const path = prefix ? `${prefix}.${name}` : name;
    if (property.type === 'object' && property.properties) out.push(...leaves(property, path, property.required || []));
    else out.push({ path, schema: property, required: required.includes(name) || property.minLength > 0 });
  }
  return out;
}

const types = (schema) => [].concat(schema.type || []);

/** The label of a record of `resource`: the catalog's display label (x-brandhub-label),
 * with the record's code after it where the resource has one (names need not be unique,
 * codes are); `full` resolves {__KEY} references of the answer it came in. */
export async function recordLabel(resource, record, full = (r) => r) {
  const label = await labelOf(resource, record, full);
  const code = full(record) && full(record).code;
  if (!label) return code || '';
  return code && !label.includes(code) ? `${label} (${code})` : label;
}

/** The `fields` that bring what a label of `resource` shows, and the field a search looks in
 * (the first text field of the label). */
async function namingOf(resource) {
  const own = await recordSchema(resource);
  const properties = own.properties || {};
  const declared = ((own['x-brandhub-label'] || {}).fields || []).filter((f) => f.split('.')[0] in properties);
  const fields = [...declared, ...(properties.code && !declared.includes('code') ? ['code'] : [])];
  const search = declared.find((f) => !f.includes('.') && types(properties[f] || {}).includes('string')) || 'id';
  return { fields, search };
}

/** A record of `resource` by id, as its label shows it. */
async function labelled(resource, id) {
  const naming = await namingOf(resource);
  const answer = await api(`/${resource}/${encodeURIComponent(id)}?fields=${['id', ...naming.fields].join(',')}`);
  return recordLabel(resource, records(answer, resource)[0], keyed(answer));
}

/** A search box with a list of the records of `target` it finds, shown by label: typing
 * searches, a click (or Enter) chooses. `value` is the chosen id ("" for none). */
function linkPicker(target, label, required) {
  const listId = 'l' + Math.random().toString(36).slice(2, 9);
  const input = el('input', {
    type: 'search', role: 'combobox', 'aria-autocomplete': 'list', 'aria-expanded': 'false', 'aria-controls': listId,
    autocomplete: 'off', placeholder: t('typeToSearch'), required,
  });
  const list = el('ul', { class: 'picker-list', role: 'listbox', id: listId, 'aria-label': label, hidden: true });
  const wrap = el('div', { class: 'picker' }, input, list);
  let chosen = '';
  let chosenLabel = '';
  let found = [];
  let active = -1;
  let asked = 0;
  const close = () => { list.hidden = true; input.setAttribute('aria-expanded', 'false'); active = -1; };
  const choose = (option) => {
    chosen = option ? option.id : '';
    chosenLabel = option ? option.label : '';
    input.value = chosenLabel;
    close();
  };
  const mark = () => [...list.children].forEach((li, i) => {
    li.setAttribute('aria-selected', i === active ? 'true' : 'false');
    if (i === active) input.setAttribute('aria-activedescendant', li.id);
  });
  async function search() {
    const text = input.value.trim();
    const mine = ++asked;
    const naming = await namingOf(target);
    const q = new URLSearchParams({ pageSize: '20', fields: ['id', ...naming.fields].join(','), order_by: naming.search });
    if (text && naming.search !== 'id') q.set(naming.search, `@${text.replace(/@/g, '')}@`);
    let answer;
    // Spaces as %20: the API reads a + as itself.
    try { answer = await api(`/${target}?${q.toString().replace(/\+/g, '%20')}`); } catch { answer = null; }
    if (mine !== asked) return;
    const full = keyed(answer);
    answer = records(answer, target);
    found = await Promise.all(answer.map(async (r) => ({ id: r.id, label: await recordLabel(target, r, full) })));
    list.replaceChildren(...(found.length ? found.map((o, i) => {
      const li = el('li', { role: 'option', id: `${listId}-${i}`, 'data-id': o.id }, o.label);
      li.addEventListener('mousedown', (e) => { e.preventDefault(); choose(o); });
      return li;
    }) : [el('li', { class: 'muted', 'aria-disabled': 'true' }, t('noRecords'))]));
    active = -1;
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
  }
  let timer;
  input.addEventListener('input', () => { chosen = ''; clearTimeout(timer); timer = setTimeout(search, 150); });
  input.addEventListener('focus', () => { if (!chosen) search(); });
  input.addEventListener('blur', () => setTimeout(() => {
    // Typed text that is exactly one record's label (or name) chooses it.
    if (!chosen && input.value.trim()) {
      const text = input.value.trim().toLowerCase();
      const exact = found.filter((o) => o.label.toLowerCase() === text || o.label.toLowerCase().startsWith(`${text} (`));
      if (exact.length === 1) choose(exact[0]);
    }
    close();
  }, 0));
  input.addEventListener('keydown', (e) => {
    if (list.hidden || !found.length) return;
    if (e.key === 'ArrowDown') { active = Math.min(found.length - 1, active + 1); mark(); e.preventDefault(); }
    else if (e.key === 'ArrowUp') { active = Math.max(0, active - 1); mark(); e.preventDefault(); }
    else if (e.key === 'Enter' && active >= 0) { choose(found[active]); e.preventDefault(); }
    else if (e.key === 'Escape') close();
  });
  return {
    control: input,
    wrap,
    get value() { return chosen; },
    get typed() { return input.value.trim(); },
    set(id, text) { chosen = id || ''; chosenLabel = text || ''; input.value = chosenLabel; },
    get changedFrom() { return chosenLabel; },
  };
}

/** Fields whose values the portal itself knows (`<resource>.<path>` → [value, word] pairs),
 * offered as a list: a user's language, from the languages the portal speaks. A stored value
 * not among them is shown as it is. */
const CHOICES = {
  'user.detail.lang': () => languages(),
};

/** One control for a leaf of the body schema: {path, wrap, read() → value or undefined for
 * "leave it", problem() → a message or null, fill(value)}. */
function control(resource, leaf, editing) {
  const { path, schema: s } = leaf;
  const label = titleOf(resource, path, s);
  const ty = types(s);
  const word = label;
  const target = s['x-brandhub-link'] || s['x-brandhub-refers-to'];
  if (target) {
    const picker = linkPicker(target, word, leaf.required && !editing);
    const wrap = field(label, picker.control);
    if (leaf.required && !editing) wrap.classList.add('required');
    wrap.replaceChild(picker.wrap, picker.control);
    picker.wrap.prepend(picker.control);
    let initial = '';
    return {
      path, wrap, link: target,
      read: () => (picker.value || (picker.typed ? undefined : '')),
      changed: () => picker.value !== initial,
      problem: () => (picker.typed && !picker.value ? t('chooseFromList', { field: word })
        : (!picker.value && leaf.required && !editing ? t('fieldRequired', { field: word }) : null)),
      fill: (id, text) => { initial = id || ''; picker.set(id, text); },
      value: () => picker.value || null,
    };
  }
  let input;
  const choices = CHOICES[`${resource}.${path}`];
  if (choices) {
    input = el('select', {}, choices().map(([value, word]) => el('option', { value, lang: value }, word)));
    if (!editing) input.value = language();
  } else if (s.enum) {
    const words = s.enum.filter((v) => v !== null);
    input = el('select', {}, el('option', { value: '' }, leaf.required && !editing ? t('choose') : t('none')),
      words.map((v) => el('option', { value: v }, valueWord(path, v, s))));
  } else if (ty.includes('boolean')) {
    input = el('input', { type: 'checkbox' });
  } else if (ty.includes('integer') || ty.includes('number')) {
    input = el('input', { type: 'text', inputmode: ty.includes('integer') ? 'numeric' : 'decimal' });
  } else if (ty.includes('array')) {
    input = el('input', { type: 'text' });
  } else {
    const email = /email/i.test(path);
    input = el('input', { type: email ? 'email' : 'text', maxlength: s.maxLength, autocomplete: 'off' });
  }
  const hintKey = `hint_${resource}.${path}`;
  const wrap = field(label, input, has(hintKey) ? t(hintKey) : (ty.includes('array') ? t('listHint') : null));
  if (leaf.required && !editing) wrap.classList.add('required');
  let initial = '';
  const raw = () => (input.type === 'checkbox' ? input.checked : input.value.trim());
  const read = () => {
    const v = raw();
    if (input.type === 'checkbox') return v;
    if (v === '') return ty.includes('null') || s.enum ? null : '';
    if (ty.includes('integer') || ty.includes('number')) return Number(v.replace(',', '.'));
    if (ty.includes('array')) return v.split(',').map((x) => x.trim()).filter(Boolean);
    return v;
  };
  return {
    path, wrap,
    read,
    changed: () => String(raw()) !== String(initial),
    problem: () => {
      const v = raw();
      if (leaf.required && !editing && v === '') return t('fieldRequired', { field: word });
      if ((ty.includes('integer') || ty.includes('number')) && v !== '' && Number.isNaN(Number(String(v).replace(',', '.')))) return t('fieldNumber', { field: word });
      return null;
    },
    fill: (value) => {
      if (input.type === 'checkbox') input.checked = Boolean(value);
      else if (choices) {
        // A new record starts in the page's language; a stored value the list lacks is
        // added to it as it is, so that it stays unless changed.
        const text = value === null || value === undefined || value === '' ? (editing ? '' : language()) : String(value);
        if (![...input.options].some((o) => o.value === text)) input.append(el('option', { value: text }, text));
        input.value = text;
      } else input.value = value === null || value === undefined ? '' : (Array.isArray(value) ? value.join(', ') : String(value));
      initial = raw();
    },
  };
}

/** Sets a dotted path of an object. */
function put(body, path, value) {
  const parts = path.split('.');
  let at = body;
  for (const part of parts.slice(0, -1)) at = (at[part] = at[part] || {});
  at[parts[parts.length - 1]] = value;
}

/** The value at a dotted path of a record. */
const at = (record, path) => path.split('.').reduce((v, k) => (v && typeof v === 'object' ? v[k] : undefined), record);

/** Shows problems of the form itself (before anything is sent) in the slot. */
function localProblems(slot, problems) {
  slot.show({ problem: { title: t('checkForm'), errors: problems.map((p) => ({ message: p })) } });
}

/** The form of a new record of `resource`. */
export async function renderCreate(main, resource) {
  const body = await bodySchema(resource, 'POST');
  if (!body) { main.replaceChildren(heading(t('notFound'))); return; }
  const word = resourceWord(resource);
  const controls = leaves(body).filter((l) => !(types(l.schema).includes('array') && l.schema.items && l.schema.items.pattern))
    .map((l) => control(resource, l, false));
  const button = el('button', { type: 'submit' }, t('createRecord', { resource: word }));
  const slot = errorSlot();
  const done = el('div', { 'aria-live': 'polite' });
  const form = el('form', { class: 'card record-form', novalidate: true },
    el('p', { class: 'muted' }, t('requiredHint')),
    el('div', { class: 'form-grid' }, controls.map((c) => c.wrap)), slot, el('div', { class: 'form-actions' }, button));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      done.replaceChildren();
      const problems = controls.map((c) => c.problem()).filter(Boolean);
      if (problems.length) return localProblems(slot, problems);
      const json = {};
      for (const c of controls) {
        const v = c.read();
        if (v === undefined || v === null || v === '' || (Array.isArray(v) && !v.length)) continue;
        put(json, c.path, v);
      }
      const created = records(await api(`/${resource}`, { method: 'POST', json }), resource)[0];
      let label;
      try { label = await labelled(resource, created.id); } catch { label = await recordLabel(resource, created); }
      done.replaceChildren(el('p', { class: 'notice', role: 'status', tabindex: '-1' },
        label ? t('recordCreated', { resource: word, Resource: capital(word), label }) : t('recordCreatedNoLabel', { resource: word, Resource: capital(word) }), ' ',
        el('a', { href: `#/browse/${resource}/${created.id}` }, t('openRecord')), ' · ',
        el('a', { href: `#/admin/edit/${resource}/${created.id}` }, t('editRecord'))));
      form.reset();
      for (const c of controls) c.fill(undefined, '');
      done.firstChild.focus();
    });
  });
  main.replaceChildren(
    el('p', {}, el('a', { href: '#/admin' }, `← ${t('admin')}`)),
    heading(t('newRecord', { resource: word })), done, form);
}

/** The form that changes a record of `resource`: its fields as they are, only what changed
 * is sent. */
export async function renderEdit(main, resource, id) {
  const body = await bodySchema(resource, 'PATCH');
  const word = resourceWord(resource);
  if (!body) { main.replaceChildren(heading(t('notFound'))); return; }
  const record = records(await api(`/${resource}/${encodeURIComponent(id)}`), resource)[0];
  const label = await labelled(resource, id);
  const controls = leaves(body).filter((l) => !(types(l.schema).includes('array') && l.schema.items && l.schema.items.pattern))
    .map((l) => control(resource, l, true));
  for (const c of controls) {
    const value = at(record, c.path);
    if (c.link) {
      let text = '';
      if (value) {
        try {
          text = await labelled(c.link, value);
        } catch { text = value; }
      }
      c.fill(value, text);
    } else c.fill(value);
  }
  const button = el('button', { type: 'submit' }, t('saveChanges'));
  const slot = errorSlot();
  const done = el('div', { 'aria-live': 'polite' });
  const form = el('form', { class: 'card record-form', novalidate: true },
    el('div', { class: 'form-grid' }, controls.map((c) => c.wrap)), slot, el('div', { class: 'form-actions' }, button));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    busy(button, slot, async () => {
      done.replaceChildren();
      const problems = controls.map((c) => c.problem()).filter(Boolean);
      if (problems.length) return localProblems(slot, problems);
      const json = {};
      for (const c of controls.filter((x) => x.changed())) {
        const v = c.read();
        put(json, c.path, v === '' ? null : v);
      }
      if (!Object.keys(json).length) {
        done.replaceChildren(el('p', { class: 'notice', role: 'status' }, t('nothingChanged')));
        return;
      }
      await api(`/${resource}/${encodeURIComponent(id)}`, { method: 'PATCH', json });
      await renderEdit(main, resource, id);
      main.querySelector('[aria-live]').replaceChildren(el('p', { class: 'notice', role: 'status' }, t('recordSaved', { resource: word, Resource: capital(word), label: label || '' })));
    });
  });
  main.replaceChildren(
    el('p', {}, el('a', { href: `#/browse/${resource}/${id}` }, `← ${label || word}`)),
    heading(label ? t('editTitle', { resource: word, label }) : t('editTitleNoLabel', { resource: word })), done, form);
}

/** The admin's list of what can be set up: a "New …" link for each creatable resource. */
export async function setupCard(may) {
  const list = await creatable(may);
  if (!list.length) return null;
  return el('section', { class: 'card' }, el('h2', {}, t('setUp')), el('p', { class: 'muted' }, t('setUpHint')),
    el('ul', { class: 'setup-links' }, list.map((r) => el('li', {}, el('a', { href: `#/admin/new/${r}`, class: 'button-link' }, t('newRecord', { resource: resourceWord(r) }))))));
}

/** A link to the form that changes this record, when the API lets the user change it. */
export async function editLink(resource, id, may) {
  if (!may(resource, 'PATCH') || !(await bodySchema(resource, 'PATCH'))) return null;
  return el('p', {}, el('a', { href: `#/admin/edit/${resource}/${id}`, class: 'button-link' }, t('editRecord')));
}
