// What people read about records, from the API's description (/api/openapi.json, derived
// from the catalog): what a resource's records are called, a field's title, the word of a
// code, how a record is named (its display label) and which amounts are money in which
// currency. Nothing here lists a resource or a field: the description says.
import { schema } from './api.js';
import { language, display, money } from './i18n.js';

const schemaName = (resource) => resource[0].toUpperCase() + resource.slice(1);

/** The schema of a resource's records in a loaded description (`doc`, from schema()). */
export function schemaIn(doc, resource) {
  return doc.components.schemas[schemaName(resource)] || { properties: {} };
}

/** The schema of a resource's records in the description. */
export async function recordSchema(resource) {
  return schemaIn(await schema(), resource);
}

/** The resource a relation property leads to (from its $ref), or null for a field. */
export function relationTarget(property) {
  const shapes = property && (property.anyOf || (property.items && property.items.anyOf));
  const ref = (shapes || []).map((o) => o.$ref).find((r) => r && !r.endsWith('/Key'));
  if (!ref) return null;
  const name = ref.split('/').pop();
  return name[0].toLowerCase() + name.slice(1);
}

/** Whether a relation property leads to many records. */
export const toMany = (property) => Boolean(property && property.type === 'array' && property.items && property.items.anyOf);

/** A title in the user's language: x-brandhub-titles, else the English title. */
export function titleOf(property, fallback = '') {
  if (!property) return fallback;
  const titles = property['x-brandhub-titles'] || {};
  return titles[language()] || property.title || fallback;
}

/** What a resource's records are called (one or many) in the user's language, from a
 * loaded description. */
export function resourceNameIn(doc, resource, many = true) {
  const names = schemaIn(doc, resource)['x-brandhub-names'];
  const mine = names && (names[language()] || names.en);
  return mine ? (many ? mine.many : mine.one) : resource;
}

/** What a resource's records are called (one or many) in the user's language. */
export async function resourceName(resource, many = true) {
  return resourceNameIn(await schema(), resource, many);
}

/** The property at a dotted path of a resource's schema (through objects, not relations). */
export function propertyAt(recordSchema, path) {
  let node = recordSchema;
  for (const name of path.split('.')) node = node && node.properties && node.properties[name];
  return node || null;
}

/** The word of a code (a status, a type) in the user's language, or the code. */
export function wordOf(property, code) {
  const words = property && property['x-brandhub-words'];
  const entry = words && words[code];
  return entry ? entry[language()] || entry.en : code;
}

/** Records by id from anywhere in an answer: an entity shown expanded earlier in an answer
 * comes again as a {__KEY} reference; `full(ref)` gives what the answer shows of it. Several
 * expansions of one record are merged, so that each selection adds to what is known. */
export function keyed(answer) {
  const seen = new Map();
  const walk = (value) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') {
      if (value.id) seen.set(value.id, Object.assign(seen.get(value.id) || {}, value));
      Object.values(value).forEach(walk);
    }
  };
  walk(answer);
  return (ref) => (ref && (ref.id || ref.__KEY) && seen.get(ref.id || ref.__KEY)) || ref || null;
}

/** The `fields` items of each resource, worked out once: the description does not change
 * while the page is open. */
const labelFields = new Map();

/** The `fields` items that bring the labels of a resource's to-one relations into the same
 * answer (`stock_variant.variant_product.title`), besides the default template. A new
 * array each time: callers narrow it. */
export async function labelFieldsOf(resource) {
  let items = labelFields.get(resource);
  if (!items) {
    const doc = await schema();
    items = [];
    for (const [name, property] of Object.entries(schemaIn(doc, resource).properties || {})) {
      const target = relationTarget(property);
      if (!target || toMany(property)) continue;
      const label = schemaIn(doc, target)['x-brandhub-label'];
      for (const path of (label && label.fields) || []) items.push(`${name}.${path}`);
    }
    labelFields.set(resource, items);
  }
  return [...items];
}

/** The display label of a record of `resource` (the catalog's template), with related
 * records named by their own labels; `full` resolves {__KEY} references (see keyed). A
 * related record whose id is `skipId` (the page's own record, shown around its lines) is
 * left out. */
export async function labelOf(resource, record, full = (r) => r, skipId = null) {
  return labelIn(await schema(), resource, record, full, skipId);
}

/** labelOf over a loaded description (`doc`, from schema()): no waiting, so that a table
 * names the related records of each of its cells in one go. */
export function labelIn(doc, resource, record, full = (r) => r, skipId = null) {
  record = full(record);
  if (!record || typeof record !== 'object') return '';
  const own = schemaIn(doc, resource);
  const label = own['x-brandhub-label'];
  if (!label || !label.template) return '';
  const pieces = label.template.split(/\{([^}]*)\}/);
  // pieces: text, placeholder, text, placeholder, …, text.
  let out = '';
  let any = false;
  for (let i = 1; i < pieces.length; i += 2) {
    let value = '';
    for (const name of pieces[i].split('|')) {
      const property = own.properties[name];
      const target = relationTarget(property);
      const related = target && full(record[name]);
      if (target && skipId && related && (related.id || related.__KEY) === skipId) break;
      if (target) value = labelIn(doc, target, related, full);
      else value = shown(property, record[name], record);
      if (value) break;
    }
    if (!value) continue;
    out += (any || i === 1 ? pieces[i - 1] : '') + value;
    any = true;
    if (i === pieces.length - 2) out += pieces[i + 1];
  }
  return out.trim();
}

/** The text of a value of a property: words for codes, money with two decimals and its
 * currency (`record` gives the currency's path), dates and numbers in the user's format. */
export function shown(property, value, record, full = (r) => r) {
  if (value === null || value === undefined || value === '') return '';
  if (property && property['x-brandhub-money'] && typeof value === 'number') {
    const path = property['x-brandhub-money'].currency;
    return money(value, path ? currencyAt(record, path, full) : '');
  }
  if (property && property['x-brandhub-words']) {
    return Array.isArray(value) ? value.map((v) => wordOf(property, v)).join(', ') : wordOf(property, value);
  }
  return display(value);
}

/** The value at a path of a record through objects and relations (a to-many relation's
 * first record that has it), resolving {__KEY} references. */
export function currencyAt(record, path, full = (r) => r) {
  let values = [record];
  for (const name of path.split('.')) {
    values = values.flatMap((v) => { const r = full(v); const next = r && r[name]; return Array.isArray(next) ? next : [next]; });
  }
  return values.find((v) => typeof v === 'string' && v) || '';
}
