// The portal's only way to data: /api with the session key as Basic authentication.
// The key lives in sessionStorage (gone with the tab); no cookie is ever set.

import { language, t } from './i18n.js';

const STORE = 'brandhub.session';

export function session() {
  try { return JSON.parse(sessionStorage.getItem(STORE)); } catch { return null; }
}

export function saveSession(value) {
  if (value) sessionStorage.setItem(STORE, JSON.stringify(value));
  else sessionStorage.removeItem(STORE);
}

function basic(user, key) {
  const bytes = new TextEncoder().encode(`${user}:${key}`);
  let text = '';
  for (const b of bytes) text += String.fromCharCode(b);
  return 'Basic ' + btoa(text);
}

/** A problem+json answer as an error: its title, detail and per-field errors. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
  get fieldErrors() { return this.problem.errors || []; }
}

let onSignedOut = () => {};
export function whenSignedOut(handler) { onSignedOut = handler; }

/** Calls the API; answers parsed JSON (or the Response with raw), throws ApiError. */
export async function api(path, { method = 'GET', json, body, raw = false, auth = true } = {}) {
  // Says it is the portal: a 401 then comes without a challenge, so no browser dialog opens.
  // The API's problems answer in the page's language.
  const headers = { 'X-Requested-With': 'brandhub-portal', 'Accept-Language': language() };
  const current = session();
  if (auth && current) headers.Authorization = basic(current.email, current.key);
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  }
  let response;
  try {
    response = await fetch('/api' + path, { method, headers, body });
  } catch (e) {
    throw new ApiError(0, { title: t('failed'), detail: t('noConnection') });
  }
  if (!response.ok) {
    let problem;
    try { problem = await response.json(); } catch { problem = { title: response.statusText }; }
    if (response.status === 401 && auth && current) {
      saveSession(null);
      onSignedOut();
    }
    throw new ApiError(response.status, problem);
  }
  if (raw) return response;
  if (response.status === 204) return null;
  return response.json();
}

/** Fetches a file through the API and hands it to the browser as a download. */
export async function download(path, fallbackName) {
  const response = await api(path, { raw: true });
  const disposition = response.headers.get('Content-Disposition') || '';
  const match = /filename="?([^";]+)"?/.exec(disposition);
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = match ? match[1] : fallbackName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** Uploads a multipart body; answers the file record. */
export async function upload(path, form) {
  const answer = await api(path, { method: 'POST', body: form });
  return answer.response.file[0];
}

/** The records of a list answer. */
export function records(answer, resource) {
  return (answer && answer.response && answer.response[resource]) || [];
}

let openapi;
/** The OpenAPI description: resources and their fields, derived from the catalog. */
export async function schema() {
  if (!openapi) openapi = await api('/openapi.json', { auth: false });
  return openapi;
}
