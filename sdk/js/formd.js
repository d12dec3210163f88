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
/** @typedef {import('./formd.js').FileItem} FileItem */
/** @typedef {import('./formd.js').UploadContext} UploadContext */
/** @typedef {import('./formd.js').Adapter} Adapter */
/** @typedef {{sig: string, done: Promise<StateEvent>, resolve: (e: StateEvent) => void, durable: boolean}} Run */

import { challengeSolver, watchWidget } from './challenge.js';

/**
 * States in which the outbox is done with a submission. "received" is one
 * of them even after a 202: the server has it journaled, durably.
 * @type {State[]}
 */
const FINAL = ['received', 'waitlisted', 'duplicate', 'invalid', 'closed', 'full', 'failed'];

/**
 * What a status document's status means for the person. "received" is
 * what a newer server says of an entry it keeps but does not count (spam).
 * @type {Record<string, State>}
 */
const BY_STATUS = { stored: 'received', received: 'received', pending: 'received', waitlisted: 'waitlisted', duplicate: 'duplicate', rejected: 'full', cancelled: 'received' };

/** What a definitive problem code means for the person. @type {Record<string, State>} */
const BY_CODE = { 'duplicate-entry': 'duplicate', 'capacity-reached': 'full', 'form-closed': 'closed', 'validation-failed': 'invalid' };

/** Said after "failed" when the form does not list the page's origin. */
const NOT_HERE = 'This site may not send to this form.';

/**
 * Results that mean the server holds this person's entry: the same values
 * submitted again get the first result back, not a new key.
 */
const KEEP = ['received', 'waitlisted', 'duplicate'];

/**
 * Default texts; a page overrides each with a data-msg-STATE attribute on its
 * status element (the hosted page does, in the person's language), and
 * messages.js has them in English and Chinese with every field error.
 * @type {Record<string, string>}
 */
const MSG = {
  idle: '',
  sending: 'Sending…',
  saved: 'Saved on this device. It will be sent as soon as the connection allows; you can leave this page.',
  unsaved: 'Not saved on this device: keep this page open until it is sent.',
  received: 'Received. Thank you!',
  waitlisted: 'Received: you are on the waitlist.',
  duplicate: 'You are already registered.',
  invalid: 'Please correct the marked fields.',
  closed: 'This form is not taking submissions now.',
  full: 'Sorry, every place is taken.',
  failed: 'The form could not be sent.',
  uploading: 'Uploading… {percent} %',
};

/**
 * A new idempotency key: a random UUID. crypto.randomUUID exists only in
 * secure contexts, so plain-http pages and mini-programs fall back.
 * @returns {string}
 */
export function newKey() {
  // Not globalThis: some mini-program runtimes lack it.
  const c = typeof crypto == 'object' ? crypto : undefined;
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
 * A file value: a Blob (a File from an input) in browsers; a chosen file's
 * {tempFilePath, size} (chooseMedia) or {path, size} in mini-programs.
 * @param {any} v
 */
const isFile = (v) => (typeof Blob == 'function' && v instanceof Blob) || !!(v && typeof v == 'object' && (v.tempFilePath || v.path) && v.size >= 0);

/**
 * Takes the files out of a submission's values, to be kept with the entry
 * and uploaded before it is sent (uploads.js); a list of files leaves []
 * in its place, a single file nothing.
 * @param {Record<string, unknown>} data
 * @returns {[Record<string, unknown>, Record<string, FileItem[]> | undefined]}
 */
const split = (data) => {
  /** @type {Record<string, any>} */
  const d = { ...data };
  /** @type {Record<string, FileItem[]> | undefined} */
  let files;
  for (const k in d) {
    const v = d[k];
    const l = Array.isArray(v) ? v : [v];
    if (!l.length || !l.every(isFile)) continue;
    (files = files || {})[k] = l.map((f) => {
      const path = f.tempFilePath || f.path;
      return { name: f.name || (path ? path.split('/').pop() : ''), type: f.type || '', size: f.size, blob: path ? undefined : f, path };
    });
    if (Array.isArray(v)) d[k] = [];
    else delete d[k];
  }
  return [d, files];
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
 * Its put resolves false: the client then tells the person that nothing
 * is saved on the device.
 * @returns {Storage}
 */
export function memoryStorage() {
  /** Copies as JSON, as the durable stores do; files by reference. @type {Map<string, [string, Entry['files']]>} */
  const m = new Map();
  return {
    put: async (e) => (m.set(e.key, [JSON.stringify(e), e.files]), false),
    delete: async (k) => void m.delete(k),
    list: async () => Array.from(m.values(), ([j, files]) => ({ ...JSON.parse(j), files })),
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
    // A file's bytes do not fit in Web Storage: an entry with files is
    // not saved whole.
    put: async (e) => (ls.setItem(prefix + e.key, JSON.stringify(e)), !e.files),
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
 * same shape (MiniProgramAPI is checked against both platforms' typings).
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
  /**
   * setStorageSync throws when the write fails (the 10 MB limit): the put
   * then rejects, and the person is told the entry is not saved.
   * @param {(m: Record<string, Entry>) => void} f
   */
  const change = async (f) => {
    const m = read();
    f(m);
    api.setStorageSync(key, m);
  };
  /** @type {string | undefined} */
  let lang;
  try {
    lang = (api.getAppBaseInfo ? api.getAppBaseInfo() : api.getSystemInfoSync()).language;
  } catch {}
  return {
    lang,
    transport: (q) =>
      new Promise((res, rej) =>
        api.request({
          url: q.url,
          // wx.request and uni.request have no PATCH: tus takes a POST
          // that says it is one.
          method: q.method == 'PATCH' ? 'POST' : q.method,
          header: q.method == 'PATCH' ? { ...q.headers, 'X-HTTP-Method-Override': 'PATCH' } : q.headers,
          data: /** @type {string | ArrayBuffer | undefined} */ (q.body),
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
          // errMsg says "request:fail timeout" when the request may have
          // reached the server; other failures (no network, a domain not in
          // the legal list) never left the device.
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
      const show = () => cb();
      api.onNetworkStatusChange(net);
      if (api.onAppShow) api.onAppShow(show);
      return () => {
        api.offNetworkStatusChange(net);
        if (api.offAppShow) api.offAppShow(show);
      };
    },
  };
}

/**
 * The language of the texts: "zh" for any Chinese tag, else "en".
 * @param {string} [tag] e.g. "zh_CN" (wx), "zh-CN", "en-US"; default: the page's
 * @returns {'zh' | 'en'}
 */
export function language(tag) {
  const d = typeof document == 'object' ? document : null;
  const n = typeof navigator == 'object' ? navigator : null;
  return /^zh/i.test(tag || (d && d.documentElement.lang) || (n && n.language) || '') ? 'zh' : 'en';
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
  // Proof-of-work (challenge.js): solutions for forms that want one.
  const pow = o.challenge === false ? null : o.challenge || challengeSolver({ transport, setTimeout: setT, now, timeout });
  /** @type {Set<(e: StateEvent) => void>} */
  const subs = new Set();
  /** @type {Map<string, Run>} */
  const running = new Map();
  /** The first result of each submission that reached the server, by its values. @type {Map<string, StateEvent>} */
  const answered = new Map();
  /** Waits that a wake-up (or close) may cut short. @type {Set<() => void>} */
  const sleepers = new Set();
  let closed = false;
  /** Submission requests on their way: beacons wait until there are none. */
  let busy = 0;

  /**
   * @param {string} url
   * @param {Record<string, unknown>} data
   * @param {Entry['files']} [files] named by their names and sizes
   */
  const sigOf = (url, data, files) => url + JSON.stringify({ ...data, _ts: 0, altcha: 0, _f: files && Object.keys(files).map((k) => [k, files[k].map((f) => [f.name, f.size])]) });

  /**
   * @param {number} ms
   * @param {boolean} wakeable false while honouring the server's Retry-After
   * @returns {Promise<void>}
   */
  const sleep = (ms, wakeable) =>
    new Promise((res) => {
      // close() ends every wait, whatever it waits for.
      const w = () => {
        if (wakeable || closed) {
          clearT(id);
          sleepers.delete(w);
          res();
        }
      };
      const id = setT(() => {
        sleepers.delete(w);
        res();
      }, ms);
      sleepers.add(w);
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
    // The participant's link, where the person sees, changes or cancels
    // their entry: a path on the server, made a URL.
    const m = ev.doc && ev.doc.manage;
    if (m) ev.manage = /^https?:/.test(m) ? m : endpoint + m;
    if (FINAL.includes(state)) {
      if (KEEP.includes(state)) answered.set(run.sig, ev);
      else answered.delete(run.sig);
    }
    return tell(ev);
  };

  /** @param {StateEvent} ev */
  const tell = (ev) => {
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

  /**
   * Writes an entry; true only if it is on the device's durable storage.
   * A failed write does not stop the send: sending beats refusing.
   * @param {Entry} e
   */
  const save = async (e) => {
    try {
      return (await storage.put(e)) !== false;
    } catch {
      return false;
    }
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
   * @param {'GET' | 'POST'} method
   * @param {string} url
   * @param {Entry} [e] the entry to POST
   */
  const req = (method, url, e) =>
    raw({
      method,
      url,
      timeout,
      headers: e ? { 'Content-Type': 'application/json', Accept: 'application/json', 'Idempotency-Key': e.key } : { Accept: 'application/json' },
      body: e && JSON.stringify(e.data),
    });

  /** @param {TransportRequest} q */
  const raw = async (q) => {
    if (closed) throw netError(false);
    busy++;
    try {
      return await transport(q);
    } finally {
      if (!--busy) kick(0);
    }
  };

  /** The upload module (uploads.js), loaded with the first file. */
  const up = () => o.uploads || import('./uploads.js');
  const chunk = o.chunkSize || 1 << 20;

  // Arrival beacons (issue 10): for each key, when the person pressed send
  // and when the server's definitive answer came, kept in the outbox like
  // the submissions and sent in batches only while no submission request
  // is on its way. They never change what the person sees.
  /** Beacons waiting to be sent, by their outbox key. @type {Map<string, Entry>} */
  const beacons = new Map();
  /** Beacons already sent (a slow list() may bring one back). */
  const sent = new Set();
  /** Forms whose server has no arrivals endpoint. */
  const deaf = new Set();
  /** @type {unknown} */
  let btimer = 0;
  let bsending = false;
  let bn = 0;

  /**
   * @param {Entry} e
   * @param {'started' | 'answered'} type
   * @param {number} at
   * @param {State} [state]
   */
  const beacon = (e, type, at, state) => {
    if (o.arrivals === false || deaf.has(e.form) || !/\/submissions$/.test(e.url)) return;
    /** @type {Entry} */
    const b = { key: `arrival:${e.key}:${type}`, kind: 'arrival', form: e.form, url: e.url.replace(/submissions$/, 'arrivals'), data: { key: e.key, type, at, state }, at, tries: 0 };
    beacons.set(b.key, b);
    save(b);
    kick(1000);
  };

  /** @param {number} ms */
  const kick = (ms) => {
    if (!closed && !btimer && !bsending && beacons.size) btimer = setT(flushBeacons, ms);
  };

  /** @param {Entry[]} list */
  const forget = (list) => {
    for (const b of list) {
      beacons.delete(b.key);
      sent.add(b.key);
      storage.delete(b.key).catch(() => {});
    }
  };

  const flushBeacons = async () => {
    btimer = 0;
    // A submission on its way goes first; the last one to end kicks again.
    if (closed || busy) return;
    const all = Array.from(beacons.values());
    if (!all.length) return;
    const { url, form } = all[0];
    const batch = all.filter((b) => b.url === url).slice(0, 100);
    let wait = 0;
    bsending = true;
    try {
      const r = await transport({
        method: 'POST',
        url,
        timeout,
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ events: batch.map((b) => b.data) }),
      });
      const s = r.status;
      if (s === 404 || s === 405) {
        // A server without the endpoint: stop asking it, silently.
        deaf.add(form);
        forget(all.filter((b) => b.form === form));
      } else if (s < 300 || (s < 500 && s !== 408 && s !== 429)) {
        // Accepted, or refused for good: a beacon is not worth more tries.
        forget(batch);
        bn = 0;
      } else wait = retryAfter(r.header('Retry-After'), now()) || 1;
    } catch {
      wait = 1;
    }
    bsending = false;
    // Eight failures in a row (a cross-origin page whose server has no
    // endpoint sees only network errors) end the tries until a submission
    // or a wake-up comes; the beacons wait in the outbox.
    if (!wait) kick(0);
    else if (bn < 8) kick(Math.max(wait, random() * Math.min(cap, base * 2 ** bn++)));
  };

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
    const at = now();
    const ev = emit(run, e, state, more);
    await drop(e);
    if (o.dropFile) for (const k in e.files || {}) (e.files || {})[k].forEach(o.dropFile);
    beacon(e, 'answered', at, state);
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
      if (closed) return;
      try {
        const s = await req('GET', statusURL(e));
        if (closed) return;
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
   * first looked up by key, so that it is not sent twice for nothing; and a
   * definitive error to a send that may not be the first to arrive is
   * checked the same way before it is believed (the first outcome of a
   * key is the one that counts).
   * @param {Run} run
   * @param {Entry} e
   * @param {boolean} resumed
   */
  const drive = async (run, e, resumed) => {
    let probe = resumed && e.tries > 0;
    // A new entry was written with its first try already counted (one
    // with files: once they are uploaded).
    let counted = !resumed && e.tries > 0;
    let n = 0;
    /** A definitive error held until the status lookup says the key is unknown. @type {[State, Partial<StateEvent>] | undefined} */
    let held;
    /** @type {State | undefined} */
    let told;
    /** @type {UploadContext} */
    const uc = {
      // A chunk may take a while on a slow network: at least 8 kB/s.
      send: (q) => raw({ timeout: timeout + (q.body ? chunk / 8 : 0), ...q }),
      save,
      read: o.readFile,
      chunk,
      retryAfter: (r) => retryAfter(r.header('Retry-After'), now()),
      progress: (t) => emit(run, e, (told = 'uploading'), { progress: t.size ? Math.floor((t.sent * 100) / t.size) : 100 }),
      solve: pow && pow.needs && pow.take ? { wants: (url) => !!pow.needs && pow.needs(url), need: (url) => pow.prepare(url), take: (url) => (pow.take ? pow.take(url) : Promise.resolve('')) } : undefined,
    };
    emit(run, e, 'sending');
    if (!run.durable) emit(run, e, (told = 'unsaved'));
    for (;;) {
      let wait = 0;
      /** Why the files wait (the server's storage is full). @type {any} */
      let why;
      try {
        /** @type {TransportResponse} */
        let r;
        if (probe) {
          r = await req('GET', statusURL(e));
          if (closed) return;
          const st = r.status === 200 && r.body && r.body.status;
          if (st === 'processing') return accepted(run, e, r);
          if (st) return settle(run, e, BY_STATUS[st] || 'received', { doc: r.body });
          // This page's origin is not the form's: asking again will not
          // change that (issue 34).
          if (r.status === 403 && r.body && r.body.code === 'origin-not-allowed') return settle(run, e, 'failed', { problem: r.body, errors: [] });
          // Not there: send it now, or believe the error held. (A 5xx
          // leaves its fate unknown: ask again.)
          if (r.status === 404) {
            if (held) return settle(run, e, ...held);
            probe = false;
            continue;
          }
        } else {
          if (e.files && !e.ready) {
            // The files' bytes first (uploads.js), then the submission
            // that names them, under the same key.
            const u = await (await up()).upload(uc, e);
            if (closed) return;
            if (u.end) return settle(run, e, ...u.end);
            if (!u.done) {
              wait = u.wait || 0;
              why = u.problem;
              throw 0;
            }
          }
          if (!counted) {
            e.tries++;
            run.durable = (await save(e)) || run.durable;
          }
          counted = false;
          // (Only a form that wants one waits here: others send at once.)
          if (pow && pow.wants(e) && (await pow.attach(e))) await save(e);
          r = await req('POST', e.url, e);
          if (closed) return;
          const s = r.status;
          // 200 may be the entry this person already has, under its own
          // key: its status says what it is.
          if (s === 200 || s === 201) return settle(run, e, BY_STATUS[r.body && r.body.status] || 'received', { doc: r.body });
          if (s === 202) return accepted(run, e, r);
          if (s < 500 && s !== 408 && s !== 425 && s !== 429) {
            const p = r.body || {};
            // The uploads expired before the submission came: made again
            // from the kept files (a few times at most).
            if (p.code === 'upload-not-found' && e.files && (e.redo = (e.redo || 0) + 1) < 4) {
              (await up()).restart(e);
              continue;
            }
            // A missing or stale proof-of-work: solve afresh, send again.
            if (pow && (await pow.retry(e, p))) {
              await save(e);
              continue;
            }
            /** @type {[State, Partial<StateEvent>]} */
            const end = [BY_CODE[p.code] || 'failed', { problem: p, errors: p.errors || [] }];
            // The first send of this key: the answer is its first outcome.
            if (e.tries < 2) return settle(run, e, ...end);
            held = end;
            probe = true;
            continue;
          }
        }
        wait = retryAfter(r.header('Retry-After'), now());
      } catch (err) {
        if (closed) return;
        // After a timeout the request may have landed: ask before re-sending.
        probe = probe || !!(err && /** @type {any} */ (err).timeout);
      }
      const d = Math.max(wait, random() * Math.min(cap, base * 2 ** n++));
      const st = run.durable ? 'saved' : 'unsaved';
      if (st !== told || why) emit(run, e, (told = st), { retryIn: d, problem: why });
      // A wake-up (back online, page shown) may cut the backoff short, but
      // not a wait the server asked for.
      await sleep(d, !wait);
      if (closed) return;
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
    /** @type {Run} */
    const run = { sig: sigOf(e.url, e.data, e.files), done, resolve, durable: resumed };
    running.set(e.key, run);
    // The entry is in the outbox before anything is sent; the beacon that
    // says it was started is written once its request is on its way.
    (resumed ? Promise.resolve(true) : save(e)).then((ok) => {
      run.durable = ok;
      if (closed) return;
      drive(run, e, resumed);
      if (!resumed) beacon(e, 'started', e.at);
    });
    return done;
  };

  const flush = async () => {
    if (closed) return;
    for (const w of Array.from(sleepers)) w();
    /** @type {Entry[]} */
    let list = [];
    try {
      list = await storage.list();
    } catch {}
    if (closed) return;
    for (const e of list) {
      if (e.kind) {
        if (!sent.has(e.key) && !deaf.has(e.form)) beacons.set(e.key, e);
      } else if (!running.has(e.key)) start(e, true);
    }
    kick(1000);
  };

  const unwake = (o.wake || browserWake)(flush);
  flush();

  return {
    lang: language(o.lang),
    submit(form, data, opts = {}) {
      if (closed) return Promise.reject(new Error('formd client closed'));
      const url = opts.url || `${endpoint}/v1/forms/${encodeURIComponent(form)}/submissions`;
      const [plain, files] = split(data);
      const sig = sigOf(url, plain, files);
      // A press again while the first is on its way joins it; after the
      // server has the entry, the same values get the same result.
      for (const r of running.values()) if (r.sig === sig) return r.done;
      const had = answered.get(sig);
      if (had) return Promise.resolve(tell(had));
      const key = opts.key || newKey();
      const keep = o.keepFile;
      if (files && keep) for (const k in files) files[k] = files[k].map((f) => keep(f, key));
      return start({ key, form, url, data: plain, files, at: now(), tries: files ? 0 : 1 }, false);
    },
    flush,
    on(f) {
      subs.add(f);
      return () => void subs.delete(f);
    },
    pending: async () => (await storage.list()).filter((e) => !e.kind),
    challenge: pow || undefined,
    close() {
      if (closed) return;
      closed = true;
      unwake();
      subs.clear();
      clearT(btimer);
      for (const w of Array.from(sleepers)) w();
    },
  };
}

/**
 * A field error's text from a template: {label} and {limit} are filled
 * in, and a part in [brackets] is kept only when the error carries its
 * limit (servers before limit existed send none).
 * @param {string} t e.g. "内容太长[，最多 {limit} 个字符]。"
 * @param {FieldError} fe
 * @param {string} [label]
 * @returns {string}
 */
export function fieldText(t, fe, label = fe.field) {
  return t.replace(/\[(.*?)\]/g, (_, s) => (fe.limit ? s : '')).replace(/\{(label|limit)\}/g, (_, k) => (k == 'label' ? label : fe.limit || ''));
}

/**
 * A browser's constraint failure as formd's field error (its code, an
 * English message as the server words it, the bound), so the page shows
 * its own text in its own language (data-err-CODE), never the browser's.
 * @param {HTMLInputElement} x
 * @returns {FieldError}
 */
function nativeError(x) {
  const v = x.validity, t = x.type, d = t === 'date';
  /** @type {(code: FieldError['code'], message: string, limit?: string) => FieldError} */
  const e = (code, message, limit) => (limit ? { field: x.name, code, message, limit } : { field: x.name, code, message });
  if (v.valueMissing) return e('required', 'is required');
  if (v.typeMismatch) return t === 'email' ? e('invalid-email', 'must be an e-mail address') : e('invalid-value', 'is not valid');
  if (v.badInput) return d ? e('invalid-date', 'must be a date (YYYY-MM-DD)') : e('not-a-number', 'must be a number');
  if (v.tooShort) return e('too-short', `must be at least ${x.minLength} characters`, String(x.minLength));
  if (v.tooLong) return e('too-long', `must be at most ${x.maxLength} characters`, String(x.maxLength));
  if (v.rangeUnderflow) return e(d ? 'too-early' : 'too-small', `must be at least ${x.min}`, x.min);
  if (v.rangeOverflow) return e(d ? 'too-late' : 'too-large', `must be at most ${x.max}`, x.max);
  if (v.stepMismatch) return e('not-an-integer', 'must be a whole number');
  if (v.patternMismatch) return e('pattern', 'does not have the expected form');
  return e('invalid-value', 'is not valid');
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
    if (!name || x.disabled || name === '_key' || !('value' in x) || /^(submit|button|reset|image|fieldset)$/.test(type)) continue;
    if (type === 'file') {
      // Kept in the outbox and uploaded before the submission.
      const l = Array.from(x.files || []);
      if (l.length) d[name] = x.multiple ? l : l[0];
    } else if (type === 'checkbox') {
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
  const texts = o.messages || {};
  /** @param {string} k @param {string} d */
  const text = (k, d) => box.getAttribute('data-' + k) || texts[k] || d;
  /** The key being sent for this form, true before it is known. @type {string | boolean} */
  let busy = false;
  const shown = Date.now();
  el.noValidate = true;
  // A form that wants a proof-of-work: solve while the person fills it in
  // (the hosted page's altcha widget does; else the client's solver).
  const widget = watchWidget(el);
  if (url && el.hasAttribute('data-formd-challenge') && client.challenge && !el.querySelector('altcha-widget')) client.challenge.prepare(url);

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
      const label = ((f && (f.getAttribute('data-label') || (f.labels && f.labels[0] && f.labels[0].textContent))) || fe.field).replace(/\s*\*\s*$/, '').trim();
      const t = text('err-' + fe.code, '');
      const msg = fe.code === 'native' ? fe.message : t ? fieldText(t, fe, label) : label + ' ' + fe.message;
      // A field with no visible control (unknown to the page, or hidden)
      // is named in the status line, where the person can read it.
      if (!f || f.type === 'hidden') {
        rest.push(msg);
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
      b.textContent = msg;
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
    // A problem code with a text of its own (a file refused, storage
    // full) says more than the state.
    const c = ev.problem && ev.problem.code;
    const more = c ? text('code-' + c, c === 'origin-not-allowed' ? NOT_HERE : '') : '';
    box.textContent = (text('msg-' + ev.state, MSG[ev.state]) + (more && ' ' + more)).replace('{percent}', String(ev.progress));
    if (ev.state === 'invalid') mark(ev.errors || []);
    // The participant's link, beside the status line (its text stays the
    // state's), hidden again on any state without one.
    let ml = /** @type {HTMLElement | null} */ (el.querySelector('[data-formd-manage]'));
    if (ev.manage && !ml) {
      ml = doc.createElement('p');
      ml.setAttribute('data-formd-manage', '');
      ml.append(doc.createElement('a'));
      box.after(ml);
    }
    if (ml) {
      ml.hidden = !ev.manage;
      const a = /** @type {HTMLAnchorElement} */ (ml.firstChild);
      a.href = ev.manage || '';
      a.textContent = text('msg-manage', 'My registration');
    }
    for (const t of ['formd:state', 'formd:' + ev.state]) el.dispatchEvent(new CustomEvent(t, { detail: ev, bubbles: true }));
  };

  client.on((ev) => {
    if (ev.form !== id) return;
    if (!FINAL.includes(ev.state)) busy = ev.key;
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
      show({ state: 'invalid', form: id, key: '', errors: bad.map(nativeError) });
      return;
    }
    busy = true;
    // A draft's page sends under the draft's key (drafts.js sets it).
    widget().then(() => client.submit(id, collect(el, shown), { url, key: el.dataset.formdKey })).then((ev) => {
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
