// @ts-check
/**
 * formd client SDK: a submission a person makes is never dropped on the
 * device. It is written to a durable outbox before the first send, sent with
 * one idempotency key that never changes, retried with backoff until the
 * server gives a definitive answer, and only then removed.
 *
 * Dependency-free ES module for browsers, WeChat mini-programs and uni-app.
 * Types: formd.d.ts. Served by formd at /sdk/formd.js.
 *
 * @module formd
 */

/** @typedef {import('./formd.js').State} State */
/** @typedef {import('./formd.js').StateEvent} StateEvent */
/** @typedef {import('./formd.js').Entry} Entry */
/** @typedef {import('./formd.js').Storage} Storage */
/** @typedef {import('./formd.js').Transport} Transport */
/** @typedef {import('./formd.js').TransportRequest} TransportRequest */
/** @typedef {import('./formd.js').TransportResponse} TransportResponse */
/** @typedef {import('./formd.js').ClientOptions} ClientOptions */
/** @typedef {import('./formd.js').Client} Client */
/** @typedef {import('./formd.js').EnhanceOptions} EnhanceOptions */
/** @typedef {import('./formd.js').FieldError} FieldError */
/** @typedef {import('./formd.js').MiniProgramAPI} MiniProgramAPI */
/** @typedef {import('./formd.js').Adapter} Adapter */
/** @typedef {{sig: string, done: Promise<StateEvent>, resolve: (e: StateEvent) => void}} Run */

/**
 * States in which the outbox is done with a submission. "received" is one
 * of them even after a 202: the server has it journaled, durably.
 * @type {State[]}
 */
const FINAL = ['received', 'waitlisted', 'duplicate', 'invalid', 'closed', 'full', 'failed'];

/** What a status document's status means for the person. @type {Record<string, State>} */
const BY_STATUS = { stored: 'received', waitlisted: 'waitlisted', duplicate: 'duplicate', rejected: 'full', cancelled: 'received' };

/** What a definitive problem code means for the person. @type {Record<string, State>} */
const BY_CODE = { 'duplicate-entry': 'duplicate', 'capacity-reached': 'full', 'form-closed': 'closed', 'validation-failed': 'invalid' };

/**
 * Default texts; a page overrides each with a data-msg-STATE attribute on its
 * status element (the hosted page does, in the person's language).
 * @type {Record<string, string>}
 */
const MSG = {
  idle: '',
  sending: 'Sending…',
  saved: 'Saved on this device. It will be sent as soon as the connection allows; you can leave this page.',
  received: 'Received. Thank you!',
  waitlisted: 'Received: you are on the waitlist.',
  duplicate: 'You are already registered.',
  invalid: 'Please correct the marked fields.',
  closed: 'This form is not taking submissions now.',
  full: 'Sorry, every place is taken.',
  failed: 'The form could not be sent.',
};

/**
 * A new idempotency key: a random UUID. crypto.randomUUID exists only in
 * secure contexts, so plain-http pages and mini-programs fall back.
 * @returns {string}
 */
export function newKey() {
  const c = globalThis.crypto;
  if (c && c.randomUUID) return c.randomUUID();
  const b = new Uint8Array(16);
  if (c && c.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.random() * 256;
  b[6] = (b[6] & 15) | 64;
  b[8] = (b[8] & 63) | 128;
  const h = Array.from(b, (x) => (x + 256).toString(16).slice(1)).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Milliseconds a Retry-After header asks to wait (seconds or an HTTP date).
 * @param {string | null | undefined} v
 * @param {number} now
 * @returns {number}
 */
export function retryAfter(v, now) {
  if (!v) return 0;
  const n = Number(v);
  if (n >= 0) return n * 1000;
  const t = Date.parse(v);
  return t > now ? t - now : 0;
}

/** @param {string} s */
const parse = (s) => {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
};

/**
 * A transport failure; timeout says the request may have reached the server.
 * @param {boolean} timeout
 */
const netError = (timeout) => Object.assign(new Error(timeout ? 'timeout' : 'network error'), { timeout });

/**
 * The transport for browsers and other fetch runtimes.
 * @param {typeof fetch} [f]
 * @returns {Transport}
 */
export function fetchTransport(f = (u, i) => fetch(u, i)) {
  return async (q) => {
    const ac = new AbortController();
    let late = false;
    const t = setTimeout(() => {
      late = true;
      ac.abort();
    }, q.timeout);
    try {
      const r = await f(q.url, { method: q.method, headers: q.headers, body: q.body, signal: ac.signal, credentials: 'omit', cache: 'no-store' });
      const text = await r.text();
      return { status: r.status, header: (n) => r.headers.get(n), body: parse(text) };
    } catch {
      throw netError(late);
    } finally {
      clearTimeout(t);
    }
  };
}

/**
 * An in-memory outbox: for tests, and the last resort when the device has
 * no storage at all (then a submission survives retries, not a reload).
 * @returns {Storage}
 */
export function memoryStorage() {
  /** Copies as JSON, as the durable stores do. @type {Map<string, string>} */
  const m = new Map();
  return {
    put: async (e) => void m.set(e.key, JSON.stringify(e)),
    delete: async (k) => void m.delete(k),
    list: async () => Array.from(m.values(), (e) => JSON.parse(e)),
  };
}

/**
 * The outbox in IndexedDB. Writes resolve only when their transaction has
 * committed, with strict durability where the browser offers the choice.
 * @param {string} [name]
 * @param {IDBFactory} [idb]
 * @returns {Storage}
 */
export function indexedDBStorage(name = 'formd', idb = globalThis.indexedDB) {
  /** @type {Promise<IDBDatabase> | undefined} */
  let db;
  const open = () =>
    (db = db || new Promise((res, rej) => {
      const q = idb.open(name, 1);
      q.onupgradeneeded = () => q.result.createObjectStore('outbox', { keyPath: 'key' });
      q.onsuccess = () => res(q.result);
      q.onerror = q.onblocked = () => {
        db = undefined;
        rej(q.error || new Error('indexedDB blocked'));
      };
    }));
  /**
   * @param {IDBTransactionMode} mode
   * @param {(s: IDBObjectStore) => IDBRequest | void} op
   * @returns {Promise<any>}
   */
  const run = (mode, op) =>
    open().then(
      (d) =>
        new Promise((res, rej) => {
          const t = d.transaction('outbox', mode, { durability: 'strict' });
          const q = op(t.objectStore('outbox'));
          t.oncomplete = () => res(q && q.result);
          t.onerror = t.onabort = () => rej(t.error);
        }),
    );
  return {
    put: (e) => run('readwrite', (s) => void s.put(e)),
    delete: (k) => run('readwrite', (s) => void s.delete(k)),
    list: () => run('readonly', (s) => s.getAll()),
  };
}

/**
 * The outbox in localStorage (or any Web Storage), one item per entry.
 * @param {globalThis.Storage} [ls]
 * @param {string} [prefix]
 * @returns {Storage}
 */
export function localStorageStorage(ls = globalThis.localStorage, prefix = 'formd:') {
  return {
    put: async (e) => ls.setItem(prefix + e.key, JSON.stringify(e)),
    delete: async (k) => ls.removeItem(prefix + k),
    list: async () => {
      /** @type {Entry[]} */
      const out = [];
      for (let i = 0; i < ls.length; i++) {
        const k = ls.key(i);
        const e = k && k.startsWith(prefix) && parse(ls.getItem(k) || '');
        if (e) out.push(e);
      }
      return out;
    },
  };
}

/**
 * The browser's best durable outbox: IndexedDB, else localStorage (private
 * modes and old WebViews refuse IndexedDB), else memory.
 * @returns {Storage}
 */
export function browserStorage() {
  /** @type {Promise<Storage> | undefined} */
  let pick;
  const s = () =>
    (pick = pick || (async () => {
      try {
        const i = indexedDBStorage();
        await i.list();
        return i;
      } catch {}
      try {
        const l = localStorageStorage();
        await l.list();
        return l;
      } catch {}
      return memoryStorage();
    })());
  return {
    put: async (e) => (await s()).put(e),
    delete: async (k) => (await s()).delete(k),
    list: async () => (await s()).list(),
  };
}

/**
 * Calls cb when a retry is worth trying now: the network is back, the page
 * is shown again (tab switched back, restored from the back-forward cache).
 * @param {() => void} cb
 * @returns {() => void}
 */
function browserWake(cb) {
  if (typeof document === 'undefined' || typeof addEventListener !== 'function') return () => {};
  const vis = () => document.visibilityState === 'visible' && cb();
  /** @param {PageTransitionEvent} e */
  const show = (e) => e.persisted && cb();
  addEventListener('online', cb);
  addEventListener('pageshow', show);
  document.addEventListener('visibilitychange', vis);
  return () => {
    removeEventListener('online', cb);
    removeEventListener('pageshow', show);
    document.removeEventListener('visibilitychange', vis);
  };
}

/**
 * Transport, outbox and wake-ups for WeChat mini-programs (pass wx) and
 * uni-app (pass uni): their request, storage and lifecycle APIs have the
 * same shape.
 * @param {MiniProgramAPI} api
 * @param {string} [key] the storage key that holds the outbox
 * @returns {Adapter}
 */
export function miniProgram(api, key = 'formd-outbox') {
  /** @returns {Record<string, Entry>} */
  const read = () => {
    const v = api.getStorageSync(key);
    return v && typeof v === 'object' ? v : {};
  };
  /** @param {(m: Record<string, Entry>) => void} f */
  const change = async (f) => {
    const m = read();
    f(m);
    api.setStorageSync(key, m);
  };
  return {
    transport: (q) =>
      new Promise((res, rej) =>
        api.request({
          url: q.url,
          method: q.method,
          header: q.headers,
          data: q.body,
          timeout: q.timeout,
          // Not "json": the SDK parses, so a problem+json body is read too.
          dataType: 'text',
          responseType: 'text',
          success: (r) =>
            res({
              status: r.statusCode,
              header: (n) => {
                const h = r.header || {};
                for (const k in h) if (k.toLowerCase() === n.toLowerCase()) return String(h[k]);
                return null;
              },
              body: typeof r.data === 'string' ? parse(r.data) : r.data,
            }),
          fail: (err) => rej(netError(/time ?out/i.test((err && err.errMsg) || ''))),
        }),
      ),
    storage: {
      put: (e) => change((m) => void (m[e.key] = e)),
      delete: (k) => change((m) => void delete m[k]),
      list: async () => Object.values(read()),
    },
    wake: (cb) => {
      /** @param {{isConnected: boolean}} s */
      const net = (s) => s.isConnected && cb();
      api.onNetworkStatusChange && api.onNetworkStatusChange(net);
      api.onAppShow && api.onAppShow(cb);
      return () => {
        api.offNetworkStatusChange && api.offNetworkStatusChange(net);
        api.offAppShow && api.offAppShow(cb);
      };
    },
  };
}

/**
 * A client: submits, keeps the outbox and drives every entry in it to a
 * definitive answer. Creating one resumes what an earlier page left.
 * @param {ClientOptions} [o]
 * @returns {Client}
 */
export function createClient(o = {}) {
  const storage = o.storage || browserStorage();
  const transport = o.transport || fetchTransport();
  const now = o.now || Date.now;
  const random = o.random || Math.random;
  const setT = o.setTimeout || ((f, ms) => setTimeout(f, ms));
  const clearT = o.clearTimeout || ((id) => clearTimeout(id));
  const timeout = o.timeout || 15000;
  const base = o.baseDelay || 500;
  const cap = o.maxDelay || 30000;
  const pollFor = o.pollFor || 600000;
  const endpoint = (o.endpoint || '').replace(/\/+$/, '');
  /** @type {Set<(e: StateEvent) => void>} */
  const subs = new Set();
  /** @type {Map<string, Run>} */
  const running = new Map();
  /** Waits that a wake-up may cut short. @type {Set<() => void>} */
  const sleepers = new Set();

  /**
   * @param {number} ms
   * @param {boolean} wakeable false while honouring the server's Retry-After
   * @returns {Promise<void>}
   */
  const sleep = (ms, wakeable) =>
    new Promise((res) => {
      const done = () => {
        clearT(id);
        sleepers.delete(done);
        res();
      };
      const id = setT(done, ms);
      if (wakeable) sleepers.add(done);
    });

  /**
   * @param {Run} run
   * @param {Entry} e
   * @param {State} state
   * @param {Partial<StateEvent>} [more]
   * @returns {StateEvent}
   */
  const emit = (run, e, state, more) => {
    /** @type {StateEvent} */
    const ev = { state, form: e.form, key: e.key, ...more };
    for (const f of subs) {
      try {
        f(ev);
      } catch (err) {
        // A broken listener must not stop the outbox; report it apart.
        setT(() => {
          throw err;
        }, 0);
      }
    }
    return ev;
  };

  /** Keeps going when storage fails: sending beats refusing. @param {Entry} e */
  const save = async (e) => {
    try {
      await storage.put(e);
    } catch {}
  };

  /** @param {Entry} e */
  const drop = async (e) => {
    try {
      await storage.delete(e.key);
    } catch {}
    running.delete(e.key);
  };

  /** @param {Entry} e */
  const statusURL = (e) => e.url + '/' + encodeURIComponent(e.key);

  /**
   * @param {string} method
   * @param {string} url
   * @param {Entry} [e] the entry to POST
   */
  const req = (method, url, e) =>
    transport({
      method,
      url,
      timeout,
      headers: e ? { 'Content-Type': 'application/json', Accept: 'application/json', 'Idempotency-Key': e.key } : { Accept: 'application/json' },
      body: e && JSON.stringify(e.data),
    });

  /**
   * Ends a submission with a definitive answer.
   * @param {Run} run
   * @param {Entry} e
   * @param {State} state
   * @param {Partial<StateEvent>} [more]
   */
  const settle = async (run, e, state, more) => {
    // Shown before the outbox write completes (the answer is definitive,
    // and an entry that outlived a crash here is only replayed by the
    // server); submit() resolves once the outbox has let go.
    const ev = emit(run, e, state, more);
    await drop(e);
    run.resolve(ev);
  };

  /**
   * 202: the server has it journaled, so the outbox lets go; the final
   * outcome (stored, waitlisted, duplicate, full) is polled for.
   * @param {Run} run
   * @param {Entry} e
   * @param {TransportResponse} r
   */
  const accepted = async (run, e, r) => {
    await settle(run, e, 'received', { doc: r.body, processing: true });
    const until = now() + pollFor;
    let d = retryAfter(r.header('Retry-After'), now()) || 1000;
    while (now() < until) {
      await sleep(d, true);
      try {
        const s = await req('GET', statusURL(e));
        const st = s.status === 200 && s.body && s.body.status;
        if (st && st !== 'processing') return emit(run, e, BY_STATUS[st] || 'received', { doc: s.body });
        d = Math.max(retryAfter(s.header('Retry-After'), now()), Math.min(d * 2, 10000));
      } catch {
        d = Math.min(d * 2, 10000);
      }
    }
  };

  /**
   * Drives one entry until a definitive answer. An entry that may already
   * have reached the server (a timeout; a page that went away mid-send) is
   * first looked up by key, so that it is not sent twice for nothing.
   * @param {Run} run
   * @param {Entry} e
   * @param {boolean} resumed
   */
  const drive = async (run, e, resumed) => {
    let probe = resumed && e.tries > 0;
    // A new entry was written with its first try already counted.
    let counted = !resumed;
    let n = 0;
    let saved = false;
    emit(run, e, 'sending');
    for (;;) {
      let wait = 0;
      try {
        /** @type {TransportResponse} */
        let r;
        if (probe) {
          r = await req('GET', statusURL(e));
          const st = r.status === 200 && r.body && r.body.status;
          if (st === 'processing') return accepted(run, e, r);
          if (st) return settle(run, e, BY_STATUS[st] || 'received', { doc: r.body });
          // Not there: send it now. (A 5xx leaves its fate unknown: ask again.)
          if (r.status === 404) {
            probe = false;
            continue;
          }
        } else {
          if (!counted) {
            e.tries++;
            await save(e);
          }
          counted = false;
          r = await req('POST', e.url, e);
          if (r.status === 200 || r.status === 201) {
            return settle(run, e, r.body && r.body.status === 'waitlisted' ? 'waitlisted' : 'received', { doc: r.body });
          }
          if (r.status === 202) return accepted(run, e, r);
        }
        const s = r.status;
        if (s < 500 && s !== 408 && s !== 425 && s !== 429) {
          const p = r.body || {};
          return settle(run, e, BY_CODE[p.code] || 'failed', { problem: p, errors: p.errors || [] });
        }
        wait = retryAfter(r.header('Retry-After'), now());
      } catch (err) {
        // After a timeout the request may have landed: ask before re-sending.
        probe = probe || !!(err && /** @type {any} */ (err).timeout);
      }
      const d = Math.max(wait, random() * Math.min(cap, base * 2 ** n++));
      if (!saved) {
        saved = true;
        emit(run, e, 'saved', { retryIn: d });
      }
      // A wake-up (back online, page shown) may cut the backoff short, but
      // not a wait the server asked for.
      await sleep(d, !wait);
    }
  };

  /**
   * @param {Entry} e
   * @param {boolean} resumed
   * @returns {Promise<StateEvent>}
   */
  const start = (e, resumed) => {
    /** @type {(e: StateEvent) => void} */
    let resolve = () => {};
    /** @type {Promise<StateEvent>} */
    const done = new Promise((r) => (resolve = r));
    const run = { sig: e.url + '\n' + JSON.stringify(e.data), done, resolve };
    running.set(e.key, run);
    // The entry is in the outbox before anything is sent.
    (resumed ? Promise.resolve() : save(e)).then(() => drive(run, e, resumed));
    return done;
  };

  const flush = async () => {
    for (const w of Array.from(sleepers)) w();
    /** @type {Entry[]} */
    let list = [];
    try {
      list = await storage.list();
    } catch {}
    for (const e of list) if (!running.has(e.key)) start(e, true);
  };

  const unwake = (o.wake || browserWake)(flush);
  flush();

  return {
    submit(form, data, opts = {}) {
      const url = opts.url || `${endpoint}/v1/forms/${encodeURIComponent(form)}/submissions`;
      const sig = url + '\n' + JSON.stringify(data);
      // A second press while the first is on its way joins it.
      for (const r of running.values()) if (r.sig === sig) return r.done;
      return start({ key: newKey(), form, url, data, at: now(), tries: 1 }, false);
    },
    flush,
    on(f) {
      subs.add(f);
      return () => void subs.delete(f);
    },
    pending: () => storage.list(),
    close: unwake,
  };
}

/** @type {Client | undefined} */
let shared;
/** @type {WeakMap<HTMLFormElement, Client>} */
const enhanced = new WeakMap();

/**
 * Reads a form's values as formd takes them: strings, booleans for yes/no
 * checkboxes, lists for multiple choices. _key is left out (the SDK has its
 * own key per submission); _ts, the time the form was shown, is kept.
 * @param {HTMLFormElement} el
 * @param {number} shown
 * @returns {Record<string, unknown>}
 */
function collect(el, shown) {
  /** @type {Record<string, any>} */
  const d = {};
  for (const x of /** @type {HTMLInputElement[]} */ (Array.from(el.elements))) {
    const { name, type } = x;
    if (!name || x.disabled || name === '_key' || !('value' in x) || /^(submit|button|reset|image|file|fieldset)$/.test(type)) continue;
    if (type === 'checkbox') {
      // A yes/no box (value "true", or the default "on") is a boolean;
      // boxes with their own values are the choices of a list.
      if (x.value === 'true' || x.value === 'on') d[name] = x.checked;
      else {
        d[name] = d[name] || [];
        if (x.checked) d[name].push(x.value);
      }
    } else if (type === 'radio') {
      if (x.checked || !(name in d)) d[name] = x.checked ? x.value : '';
    } else if (type === 'select-multiple') {
      d[name] = Array.from(/** @type {HTMLSelectElement} */ (/** @type {unknown} */ (x)).selectedOptions, (p) => p.value);
    } else d[name] = x.value;
  }
  d._ts = d._ts || String(shown);
  return d;
}

/**
 * Gives a plain form the SDK's guarantees (progressive enhancement): its
 * submit goes through the outbox, its state shows as data-state and as
 * formd:state events, and field errors appear next to their inputs.
 * Without JavaScript the same form still posts on its own.
 * @param {HTMLFormElement} el
 * @param {EnhanceOptions} [o]
 * @returns {Client}
 */
export function enhance(el, o = {}) {
  const had = enhanced.get(el);
  if (had) return had;
  const client = o.client || (shared = shared || createClient());
  enhanced.set(el, client);
  const id = el.dataset.formd || '';
  const act = el.getAttribute('action') || '';
  const url = act.includes('/v1/forms/') ? el.action : undefined;
  const doc = el.ownerDocument;
  let status = /** @type {HTMLElement | null} */ (el.querySelector('[data-formd-status]'));
  if (!status) {
    status = doc.createElement('p');
    status.setAttribute('role', 'status');
    status.setAttribute('aria-live', 'polite');
    status.setAttribute('data-formd-status', '');
    el.append(status);
  }
  const box = status;
  /** @param {string} k @param {string} d */
  const text = (k, d) => box.getAttribute('data-' + k) || d;
  /** The key being sent for this form, true before it is known. @type {string | boolean} */
  let busy = false;
  let mine = '';
  let shown = Date.now();
  el.noValidate = true;

  /** @param {string} name */
  const field = (name) => {
    const n = /** @type {any} */ (el.elements.namedItem(name));
    return /** @type {HTMLInputElement | null} */ (n && (n.tagName ? n : n[0]));
  };

  const clear = () => {
    el.querySelectorAll('[data-formd-error]').forEach((b) => {
      b.textContent = '';
      /** @type {HTMLElement} */ (b).hidden = true;
    });
    el.querySelectorAll('[aria-invalid]').forEach((f) => f.removeAttribute('aria-invalid'));
  };

  /** @param {FieldError[]} errors */
  const mark = (errors) => {
    /** @type {HTMLInputElement | undefined} */
    let first;
    const rest = [];
    for (const fe of errors) {
      const f = field(fe.field);
      if (!f) {
        rest.push(fe.message);
        continue;
      }
      let b = /** @type {HTMLElement | null} */ (el.querySelector(`[data-formd-error="${CSS.escape(fe.field)}"]`));
      if (!b) {
        b = doc.createElement('span');
        b.className = 'formd-error';
        b.id = `formd-err-${id}-${fe.field}`;
        b.setAttribute('data-formd-error', fe.field);
        (f.closest('label') || f).after(b);
        f.setAttribute('aria-describedby', ((f.getAttribute('aria-describedby') || '') + ' ' + b.id).trim());
      }
      const label = f.getAttribute('data-label') || (f.labels && f.labels[0] && f.labels[0].textContent) || fe.field;
      b.textContent = fe.code === 'native' ? fe.message : text('err-' + fe.code, label.replace(/\s*\*\s*$/, '').trim() + ' ' + fe.message);
      b.hidden = false;
      f.setAttribute('aria-invalid', 'true');
      first = first || f;
    }
    if (rest.length) box.textContent += ' ' + rest.join(' ');
    if (first) first.focus();
  };

  /** @param {StateEvent} ev */
  const show = (ev) => {
    el.dataset.state = ev.state;
    el.setAttribute('aria-busy', String(ev.state === 'sending'));
    box.setAttribute('data-state', ev.state);
    box.textContent = text('msg-' + ev.state, MSG[ev.state]);
    if (ev.state === 'invalid') mark(ev.errors || []);
    if ((ev.state === 'received' || ev.state === 'waitlisted') && ev.key === mine) {
      mine = '';
      el.reset();
      shown = Date.now();
    }
    for (const t of ['formd:state', 'formd:' + ev.state]) el.dispatchEvent(new CustomEvent(t, { detail: ev, bubbles: true }));
  };

  client.on((ev) => {
    if (ev.form !== id) return;
    if (!FINAL.includes(ev.state)) busy = mine = ev.key;
    else if (busy === ev.key) busy = false;
    show(ev);
  });

  el.addEventListener('submit', (ev) => {
    ev.preventDefault();
    // Pressed again while one is on its way: join it, and try now.
    if (busy) return void client.flush();
    clear();
    if (!el.checkValidity()) {
      const bad = /** @type {HTMLInputElement[]} */ (Array.from(el.elements)).filter((x) => x.willValidate && !x.validity.valid);
      show({ state: 'invalid', form: id, key: '', errors: bad.map((x) => ({ field: x.name, code: 'native', message: x.validationMessage })) });
      return;
    }
    busy = true;
    client.submit(id, collect(el, shown), { url }).then((ev) => {
      if (busy === true || busy === ev.key) busy = false;
      // The form's thank-you page, as a post without JavaScript gets; the
      // outbox is done with the entry by now.
      const go = el.getAttribute('data-formd-redirect');
      if (go && (ev.state === 'received' || ev.state === 'waitlisted')) location.assign(go);
    });
  });
  if (!el.dataset.state) show({ state: 'idle', form: id, key: '' });
  return client;
}

// Progressive enhancement: every <form data-formd="ID"> on the page.
if (typeof document !== 'undefined') {
  const all = () =>
    document.querySelectorAll('form[data-formd]:not([data-formd-manual])').forEach((f) => enhance(/** @type {HTMLFormElement} */ (f)));
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', all);
  else all();
}
