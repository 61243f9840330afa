// Texts, numbers and dates in the user's language (detail.lang): one file per language.
import en from './lang/en.js';
import de from './lang/de.js';

const LANGUAGES = { en, de };
let current = en;
let currentCode = 'en';

export function setLanguage(lang) {
  current = LANGUAGES[lang] || en;
  currentCode = lang in LANGUAGES ? lang : 'en';
  document.documentElement.lang = currentCode;
}

/** The languages the portal speaks: [code, the language's own name]. */
export function languages() {
  return Object.entries(LANGUAGES).map(([code, texts]) => [code, texts.languageName]);
}

/** The user's language code (en, de): the key of the description's words. */
export function language() {
  return currentCode;
}

/** A text by key, with {name} placeholders filled in. */
export function t(key, values = {}) {
  const text = current[key] ?? en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ''));
}

/** Whether the user's language (or English) has a text for the key. */
export function has(key) {
  return key in current || key in en;
}

/** The language's locale (for formats the browser makes). */
export function locale() {
  return current.locale;
}

/** A formatter of the language's locale (`Intl.NumberFormat`, `Intl.DateTimeFormat`), made
 * once for each kind and options: making one costs far more than using it, and a table
 * formats every cell. */
const formats = new Map();
function format(kind, options) {
  const key = `${current.locale}|${kind}|${JSON.stringify(options)}`;
  let made = formats.get(key);
  if (!made) {
    made = new Intl[kind](current.locale, options);
    formats.set(key, made);
  }
  return made;
}

/** An amount with two decimals and its currency (an ISO 4217 code, shown as the language
 * shows it), or with the code after it when it is none. */
export function money(value, currency) {
  if (value === null || value === undefined || value === '') return '';
  if (/^[A-Z]{3}$/.test(currency || '')) {
    try {
      return format('NumberFormat', { style: 'currency', currency, minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(value);
    } catch { /* a code the browser does not know: as below */ }
  }
  const amount = format('NumberFormat', { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(value);
  return currency ? `${amount} ${currency}` : amount;
}

/** A contract timestamp's day in the user's format. */
export function date(value) {
  if (!value) return '';
  const day = new Date(value + 'Z');
  if (Number.isNaN(day.getTime())) return value;
  return format('DateTimeFormat', { dateStyle: 'medium', timeZone: 'UTC' }).format(day);
}

export function number(value) {
  if (value === null || value === undefined || value === '') return '';
  return format('NumberFormat', {}).format(value);
}

/** A contract timestamp (YYYY-MM-DDTHH:MM:SS, UTC) in the user's format. */
export function dateTime(value) {
  if (!value) return '';
  const date = new Date(value + 'Z');
  if (Number.isNaN(date.getTime())) return value;
  return format('DateTimeFormat', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(date);
}

/** A value of any field, formatted for display. */
export function display(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return number(value);
  if (typeof value === 'boolean') return value ? t('yes') : t('no');
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/.test(value)) return dateTime(value);
  if (Array.isArray(value)) return value.join(', ');
  return String(value);
}
