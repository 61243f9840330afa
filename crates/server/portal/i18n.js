// Texts, numbers and dates in the user's language (detail.lang): one file per language.
import en from './lang/en.js';
import de from './lang/de.js';

const LANGUAGES = { en, de };
let current = en;

export function setLanguage(lang) {
  current = LANGUAGES[lang] || en;
  document.documentElement.lang = lang in LANGUAGES ? lang : 'en';
}

/** A text by key, with {name} placeholders filled in. */
export function t(key, values = {}) {
  const text = current[key] ?? en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(values[name] ?? ''));
}

export function number(value) {
  if (value === null || value === undefined || value === '') return '';
  return new Intl.NumberFormat(current.locale).format(value);
}

/** A contract timestamp (YYYY-MM-DDTHH:MM:SS, UTC) in the user's format. */
export function dateTime(value) {
  if (!value) return '';
  const date = new Date(value + 'Z');
  if (Number.isNaN(date.getTime())) return value;
  return new Intl.DateTimeFormat(current.locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(date);
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
