// @ts-check
/**
 * Drafts (DESIGN §4 "Drafts"): what a person has typed so far, saved on
 * the server under the key their submission will carry, so that they can
 * finish it later on any device. A save is answered only once it is
 * durable, so a page says "saved" only after a 2xx; every save after the
 * first carries the draft's resume token (Draft-Token) and the version it
 * read (If-Match), and a save from an older window is refused (412)
 * rather than written over a newer one.
 *
 * drafts() is the API for any runtime (browsers, mini-programs through
 * their adapter's transport); watch() binds it to a hosted page's form
 * (data-formd-drafts). Dependency-free, loaded beside formd.js; it does
 * not import formd.js, so a page never gets two copies of the SDK.
 * @module formd/drafts
 */

/** @typedef {import('./drafts.js').Draft} Draft */
/** @typedef {import('./drafts.js').DraftsOptions} DraftsOptions */
/** @typedef {import('./drafts.js').Drafts} Drafts */
/** @typedef {import('./formd.js').Transport} Transport */

/** @param {string} s */
const parse = (s) => {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
};

/**
 * A refused save or read: code is the problem's (draft-version-mismatch,
 * draft-submitted, draft-not-found, …), status the HTTP status; version
 * is the current version on a 412, entryStatus the entry's on a 409.
 */
export class DraftError extends Error {
  /**
   * @param {number} status
   * @param {any} p the problem document
   */
  constructor(status, p) {
    p = p || {};
    super(p.detail || p.title || 'draft refused (' + status + ')');
    this.status = status;
    /** @type {string} */
    this.code = p.code || '';
    /** @type {number | undefined} */
    this.version = p.version;
    /** @type {string | undefined} */
    this.entryStatus = p.entry_status;
  }
}

/** @type {Transport} */
const fetchTransport = async (q) => {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), q.timeout);
  try {
    const r = await fetch(q.url, { method: q.method, headers: q.headers, body: q.body, signal: ac.signal, credentials: 'omit', cache: 'no-store' });
    const text = await r.text();
    return { status: r.status, header: (n) => r.headers.get(n), body: parse(text) };
  } catch {
    throw Object.assign(new Error('network error'), { timeout: false });
  } finally {
    clearTimeout(t);
  }
};

/**
 * The drafts API: save and resume, with the server's versions.
 * @param {DraftsOptions} [o]
 * @returns {Drafts}
 */
export function drafts(o = {}) {
  const transport = o.transport || fetchTransport;
  const timeout = o.timeout || 15000;
  const base = (o.endpoint || '').replace(/\/+$/, '');
  /** @param {string} form @param {string} [key] */
  const url = (form, key) => `${base}/v1/forms/${encodeURIComponent(form)}/drafts${key ? '/' + encodeURIComponent(key) : ''}`;
  /**
   * @param {Draft} d what the caller had
   * @param {any} b the answer's body
   * @returns {Draft}
   */
  const doc = (d, b) => {
    const token = d.token || b.resume;
    return {
      form: b.form || d.form,
      key: b.key || d.key,
      token,
      version: b.version,
      savedAt: b.saved_at,
      expiresAt: b.expires_at,
      resumeURL: `${base}/f/${encodeURIComponent(b.form || d.form)}?resume=${encodeURIComponent(token)}`,
      data: b.data || d.data,
    };
  };
  return {
    async save(d, data) {
      /** @type {Record<string, string>} */
      const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
      if (d.token) {
        headers['Draft-Token'] = d.token;
        headers['If-Match'] = `"${d.version}"`;
      }
      const r = await transport({ method: 'PUT', url: url(d.form, d.key), headers, body: JSON.stringify(data), timeout });
      if (r.status !== 200 && r.status !== 201) throw new DraftError(r.status, r.body);
      return doc({ ...d, data }, r.body || {});
    },
    async mail(d, lang) {
      /** @type {Record<string, string>} */
      const headers = { Accept: 'application/json', 'Draft-Token': d.token };
      if (lang) headers['Accept-Language'] = lang;
      const r = await transport({ method: 'POST', url: url(d.form, d.key) + '/email', headers, timeout: 45000 });
      if (r.status !== 200) throw new DraftError(r.status, r.body);
    },
    async resume(form, token) {
      const r = await transport({ method: 'GET', url: url(form), headers: { Accept: 'application/json', 'Draft-Token': token }, timeout });
      if (r.status !== 200) throw new DraftError(r.status, r.body);
      return doc({ form, key: '', token, version: 0 }, r.body || {});
    },
  };
}

/**
 * A form's values as a draft keeps them: strings, booleans for yes/no
 * boxes, lists for several choices. Files, the page's own fields (_key,
 * _ts), the proof-of-work and the honeypot (hidden from people) are left
 * out.
 * @param {HTMLFormElement} el
 * @returns {Record<string, unknown>}
 */
export function values(el) {
  /** @type {Record<string, any>} */
  const d = {};
  for (const x of /** @type {HTMLInputElement[]} */ (Array.from(el.elements))) {
    const { name, type } = x;
    if (!name || name[0] === '_' || name === 'altcha' || type === 'file' || x.closest('[aria-hidden="true"]') || !('value' in x) || /^(submit|button|reset|fieldset)$/.test(type)) continue;
    if (type === 'checkbox') {
      if (x.value === 'true' || x.value === 'on') d[name] = x.checked;
      else {
        d[name] = d[name] || [];
        if (x.checked) d[name].push(x.value);
      }
    } else d[name] = x.value;
  }
  return d;
}

/**
 * Puts a draft's values back into a form.
 * @param {HTMLFormElement} el
 * @param {Record<string, unknown>} data
 */
export function fill(el, data) {
  for (const x of /** @type {HTMLInputElement[]} */ (Array.from(el.elements))) {
    if (!x.name || !(x.name in data) || x.type === 'file') continue;
    const v = data[x.name];
    if (x.type === 'checkbox') x.checked = Array.isArray(v) ? v.includes(x.value) : v === true || v === 'true';
    else x.value = v == null ? '' : String(v);
    x.dispatchEvent(new Event('change', { bubbles: true }));
  }
}

/**
 * Binds drafts to a hosted page's form (data-formd-drafts): what is typed
 * is saved a moment after the person stops, under the page's key; the
 * status line says "saved" only after the server's 2xx, says so when a
 * save failed (and tries again), and stops saving for good when another
 * window saved the draft since (412): nothing here is written over it.
 * ?resume=TOKEN in the address opens a draft first. The submission
 * (formd.js) is sent under the draft's key: data-formd-key.
 * @param {HTMLFormElement} el
 * @param {{api?: Drafts, delay?: number}} [o]
 */
export function watch(el, o = {}) {
  const api = o.api || drafts();
  const delay = o.delay || 800;
  const box = /** @type {HTMLElement} */ (el.querySelector('[data-formd-draft-status]'));
  const link = /** @type {HTMLAnchorElement} */ (el.querySelector('[data-formd-draft-link]'));
  const keyInput = /** @type {HTMLInputElement | null} */ (el.querySelector('input[name="_key"]'));
  const form = el.dataset.formd || '';
  /** @param {string} k */
  const text = (k) => box.getAttribute('data-draft-' + k) || '';
  /** @type {Draft} */
  let d = { form, key: (keyInput && keyInput.value) || '', token: '', version: 0 };
  el.dataset.formdKey = d.key;
  /** @type {'idle' | 'saving' | 'dirty' | 'stopped'} */
  let mode = 'idle';
  // Read through a call: mode changes while a save is awaited.
  const stopped = () => mode === 'stopped';
  /** @type {any} */
  let timer = 0;
  let fails = 0;
  let filling = false;
  // Stopped for good (another window's save, a sent or lost draft).
  let halted = false;

  /** @param {string} state @param {string} [more] */
  const show = (state, more) => {
    box.setAttribute('data-state', state);
    box.textContent = text(state).replace('{time}', new Date().toLocaleTimeString(document.documentElement.lang, { hour: '2-digit', minute: '2-digit' })) + (more ? ' ' + more : '');
    el.dispatchEvent(new CustomEvent('formd:draft', { detail: { state, draft: d }, bubbles: true }));
  };

  /** @param {string} key */
  const useKey = (key) => {
    d.key = el.dataset.formdKey = key;
    if (keyInput) keyInput.value = key;
  };

  const save = async () => {
    timer = 0;
    if (mode === 'stopped') return;
    if (mode === 'saving') return void (mode = 'dirty');
    mode = 'saving';
    show('saving');
    try {
      d = await api.save(d, values(el));
      fails = 0;
      if (stopped()) return;
      show('saved');
      link.href = d.resumeURL || '';
      link.textContent = new URL(link.href, location.href).href;
      link.parentElement && (link.parentElement.hidden = false);
    } catch (err) {
      if (stopped()) return;
      const e = /** @type {DraftError} */ (err);
      if (e.code === 'draft-version-mismatch' || e.code === 'draft-exists') return stop('conflict');
      if (e.code === 'draft-submitted') return stop('submitted');
      if (e.code === 'draft-not-found') return stop('gone');
      if (e.status && e.status < 500 && e.status !== 408 && e.status !== 429) return stop('failed');
      // No answer, or the server is busy: nothing is saved yet; say so
      // and try again, later each time.
      show('retrying');
      mode = 'dirty';
      fails++;
    }
    const again = mode === 'dirty';
    mode = 'idle';
    if (again) timer = setTimeout(save, fails ? Math.min(30000, 1000 * 2 ** fails) : delay);
  };

  /** @param {string} state */
  const stop = (state) => {
    mode = 'stopped';
    halted = true;
    clearTimeout(timer);
    show(state);
  };

  const changed = () => {
    if (filling || mode === 'stopped') return;
    if (mode === 'saving') return void (mode = 'dirty');
    clearTimeout(timer);
    timer = setTimeout(save, delay);
  };
  // "E-mail me this link": the draft saved first if a save is waiting
  // (the address may be in it), then sent; "sent" only on the server's
  // 200, which comes once the mail server accepted the message.
  const mailer = /** @type {HTMLButtonElement | null} */ (el.querySelector('[data-formd-draft-mail]'));
  const mailOut = /** @type {HTMLElement | null} */ (el.querySelector('[data-formd-draft-mail-status]'));
  /** @param {string} k */
  const said = (k) => mailOut && (mailOut.textContent = (mailer && mailer.getAttribute('data-mail-' + k)) || '');
  mailer &&
    mailer.addEventListener('click', async () => {
      mailer.disabled = true;
      said('sending');
      try {
        if (timer) {
          clearTimeout(timer);
          await save();
        }
        await api.mail(d, document.documentElement.lang);
        said('sent');
      } catch (err) {
        const c = /** @type {DraftError} */ (err).code;
        said(c === 'draft-no-email' ? 'none' : c === 'draft-email-limited' ? 'limited' : 'failed');
      }
      mailer.disabled = false;
    });
  el.addEventListener('input', changed);
  el.addEventListener('change', changed);
  // Once the submission is on its way, the draft is done with (its
  // decision consumes it): no more saves, and no draft state or link is
  // shown that is no longer true. A submission refused as invalid was not
  // kept: the draft goes on.
  let sent = false;
  el.addEventListener('formd:state', (ev) => {
    const s = /** @type {CustomEvent} */ (ev).detail.state;
    if (s === 'idle') return;
    if (s === 'invalid') {
      if (sent && !halted) mode = 'idle';
      sent = false;
      return;
    }
    sent = true;
    mode = 'stopped';
    clearTimeout(timer);
    box.textContent = '';
    box.removeAttribute('data-state');
    if (link.parentElement) link.parentElement.hidden = true;
  });

  const token = new URLSearchParams(location.search).get('resume');
  if (token) {
    filling = true;
    show('opening');
    api.resume(form, token).then(
      (got) => {
        d = got;
        useKey(got.key);
        fill(el, got.data || {});
        filling = false;
        show('resumed');
        link.href = d.resumeURL || '';
        link.textContent = new URL(link.href, location.href).href;
        link.parentElement && (link.parentElement.hidden = false);
      },
      (err) => {
        filling = false;
        // A link that opens nothing starts a new draft on this page.
        const e = /** @type {DraftError} */ (err);
        if (e.code === 'draft-submitted') stop('submitted');
        else show(e.code === 'draft-not-found' ? 'gone' : 'failed');
      },
    );
  }
  return { draft: () => d, save };
}

// The hosted page: every form with data-formd-drafts.
if (typeof document !== 'undefined') {
  const all = () => document.querySelectorAll('form[data-formd-drafts]').forEach((f) => watch(/** @type {HTMLFormElement} */ (f)));
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', all);
  else all();
}
