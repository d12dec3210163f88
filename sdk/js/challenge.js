// @ts-check
/**
 * formd's proof-of-work, client side: a form with `spam: {challenge: pow}`
 * wants, with each new key, a solved challenge in ALTCHA's v1 format
 * (find the number n ≤ maxnumber with SHA-256(salt + n) = challenge).
 * This module fetches a challenge and solves it in the background — in a
 * Web Worker where the page allows one, else in small slices between
 * timers, so the page never stops answering (mini-programs have no
 * Worker in their simplest form) — and hands the solution to the outbox.
 *
 * SHA-256 is written out here (no crypto.subtle: mini-programs lack it,
 * plain-http pages too, and a synchronous loop is faster than one promise
 * per hash). Types: challenge.d.ts.
 *
 * @module formd/challenge
 */

/** @typedef {import('./formd.js').Entry} Entry */
/** @typedef {import('./formd.js').Transport} Transport */
/** @typedef {import('./challenge.js').Challenge} Challenge */
/** @typedef {import('./challenge.js').Solver} Solver */
/** @typedef {import('./challenge.js').SolverOptions} SolverOptions */

/** The body field that carries the solution (the altcha widget's name). */
export const FIELD = 'altcha';

/**
 * Makes the search: a function that tries numbers from..to and returns the
 * one whose SHA-256(salt + n) is the target (8 words), or -1. It closes
 * over nothing outside itself, so a worker can be made from its source.
 */
function makeSearch() {
  const K = new Int32Array([
    0x428a2f98, 0x71374491, -0x4a3f0431, -0x164a245b, 0x3956c25b, 0x59f111f1, -0x6dc07d5c, -0x54e3a12b, -0x27f85568, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, -0x7f214e02, -0x6423f959, -0x3e640e8c, -0x1b64963f, -0x1041b87a, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    -0x67c1aeae, -0x57ce3993, -0x4ffcd838, -0x40a68039, -0x391ff40d, -0x2a586eb9, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, -0x7e3d36d2, -0x6d8dd37b, -0x5d40175f, -0x57e599b5, -0x3db47490, -0x3893ae5d, -0x2e6d17e7, -0x2966f9dc, -0xbf1ca7b, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, -0x7b3787ec, -0x7338fdf8,
    -0x6f410006, -0x5baf9315, -0x41065c09, -0x398e870e,
  ]);
  const W = new Int32Array(64);
  /** @param {string} salt @param {Int32Array} target @param {number} from @param {number} to */
  return function search(salt, target, from, to) {
    for (let n = from; n <= to; n++) {
      const s = salt + n;
      const len = s.length;
      const words = ((len + 8) >> 6) * 16 + 16;
      const m = new Int32Array(words);
      for (let i = 0; i < len; i++) m[i >> 2] |= (s.charCodeAt(i) & 0xff) << (24 - (i & 3) * 8);
      m[len >> 2] |= 0x80 << (24 - (len & 3) * 8);
      m[words - 1] = len * 8;
      let h0 = 0x6a09e667, h1 = -0x4498517b, h2 = 0x3c6ef372, h3 = -0x5ab00ac6, h4 = 0x510e527f, h5 = -0x64fa9774, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
      for (let j = 0; j < words; j += 16) {
        for (let t = 0; t < 16; t++) W[t] = m[j + t];
        for (let t = 16; t < 64; t++) {
          const x = W[t - 15], y = W[t - 2];
          W[t] = (W[t - 16] + (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3)) + W[t - 7] + (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10))) | 0;
        }
        let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
        for (let t = 0; t < 64; t++) {
          const t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K[t] + W[t]) | 0;
          const t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
          h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
        }
        h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
        h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
      }
      if (h0 === target[0] && h1 === target[1] && h2 === target[2] && h3 === target[3] && h4 === target[4] && h5 === target[5] && h6 === target[6] && h7 === target[7]) return n;
    }
    return -1;
  };
}

const search = makeSearch();

/** @param {string} hex @returns {Int32Array} */
function words(hex) {
  const w = new Int32Array(8);
  for (let i = 0; i < 8; i++) w[i] = parseInt(hex.slice(i * 8, i * 8 + 8), 16) | 0;
  return w;
}

/**
 * Solves c on this thread, a slice of numbers at a time between timers.
 * @param {Challenge} c
 * @param {{setTimeout?: (f: () => void, ms: number) => unknown, slice?: number, now?: () => number}} [o]
 * @returns {Promise<{number: number, took: number}>}
 */
export function solveSliced(c, o = {}) {
  const setT = o.setTimeout || ((f, ms) => setTimeout(f, ms));
  const slice = o.slice || 2000;
  const now = o.now || Date.now;
  const t0 = now();
  const target = words(c.challenge);
  return new Promise((resolve, reject) => {
    let n = 0;
    const step = () => {
      const to = Math.min(n + slice - 1, c.maxnumber);
      const got = search(c.salt, target, n, to);
      if (got >= 0) return resolve({ number: got, took: now() - t0 });
      if (to >= c.maxnumber) return reject(new Error('proof-of-work challenge has no solution'));
      n = to + 1;
      setT(step, 0);
    };
    step();
  });
}

/**
 * Solves c in a Web Worker made from this module's own search (a blob: URL,
 * so it works on any origin whose CSP allows blob: workers); rejects when
 * the page cannot make one, so the caller falls back to solveSliced.
 * @param {Challenge} c
 * @param {{now?: () => number}} [o]
 * @returns {Promise<{number: number, took: number}>}
 */
export function solveInWorker(c, o = {}) {
  const now = o.now || Date.now;
  return new Promise((resolve, reject) => {
    /** @type {Worker} */
    let w;
    /** @type {string} */
    let url;
    try {
      const src = `const search=(${makeSearch.toString()})();onmessage=(e)=>{const{salt,target,max}=e.data;postMessage(search(salt,new Int32Array(target),0,max))}`;
      url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
      w = new Worker(url);
    } catch (err) {
      return reject(err);
    }
    const t0 = now();
    const end = () => {
      w.terminate();
      URL.revokeObjectURL(url);
    };
    w.onmessage = (e) => {
      end();
      if (e.data >= 0) resolve({ number: e.data, took: now() - t0 });
      else reject(new Error('proof-of-work challenge has no solution'));
    };
    w.onerror = (e) => {
      end();
      e.preventDefault();
      reject(new Error('proof-of-work worker failed'));
    };
    w.postMessage({ salt: c.salt, target: Array.from(words(c.challenge)), max: c.maxnumber });
  });
}

/**
 * The solution as the altcha widget sends it: base64 of its JSON.
 * @param {Challenge} c
 * @param {{number: number, took: number}} s
 * @returns {string}
 */
export function encodeSolution(c, s) {
  const json = JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: s.number, salt: c.salt, signature: c.signature, took: s.took });
  return base64(json);
}

/** @param {string} s an ASCII string @returns {string} */
function base64(s) {
  if (typeof btoa === 'function') return btoa(s);
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let out = '';
  for (let i = 0; i < s.length; i += 3) {
    const n = (s.charCodeAt(i) << 16) | ((s.charCodeAt(i + 1) || 0) << 8) | (s.charCodeAt(i + 2) || 0);
    out += abc[(n >> 18) & 63] + abc[(n >> 12) & 63] + (i + 1 < s.length ? abc[(n >> 6) & 63] : '=') + (i + 2 < s.length ? abc[n & 63] : '=');
  }
  return out;
}

/** @param {string} submissions a form's submissions URL */
const challengeURL = (submissions) => submissions.replace(/\/submissions$/, '/challenge');

/**
 * The client's proof-of-work: it learns which forms want one (prepare, or
 * a challenge-required answer), solves ahead while the person fills the
 * form, and puts a solution in each entry before it is sent.
 * @param {SolverOptions} o
 * @returns {Solver}
 */
export function challengeSolver(o) {
  const worker = o.worker !== false && typeof Worker === 'function' && typeof Blob === 'function' && typeof URL === 'function' && !!URL.createObjectURL;
  /** Forms (by submissions URL) that want a solution. @type {Set<string>} */
  const needs = new Set();
  /** A solution being made or ready, by submissions URL. @type {Map<string, Promise<string>>} */
  const ready = new Map();

  /** @param {string} url */
  const make = async (url) => {
    const r = await o.transport({ method: 'GET', url: challengeURL(url), timeout: o.timeout || 15000, headers: { Accept: 'application/json' } });
    if (r.status !== 200 || !r.body || typeof r.body.salt !== 'string') throw new Error('no proof-of-work challenge: ' + r.status);
    const c = /** @type {Challenge} */ (r.body);
    let s;
    if (worker) {
      try {
        s = await solveInWorker(c, o);
      } catch {}
    }
    s = s || (await solveSliced(c, o));
    return encodeSolution(c, s);
  };

  /** @param {string} url */
  const take = (url) => {
    const p = ready.get(url) || make(url);
    ready.delete(url);
    return p;
  };

  return {
    prepare(url) {
      needs.add(url);
      if (!ready.has(url)) {
        const p = make(url);
        p.catch(() => ready.get(url) === p && ready.delete(url));
        ready.set(url, p);
      }
    },
    wants: (e) => needs.has(e.url) && !(e.data && e.data[FIELD]),
    needs: (url) => needs.has(url),
    take(url) {
      needs.add(url);
      const p = take(url);
      // Solve the next one (the submission's) meanwhile.
      this.prepare(url);
      return p;
    },
    async attach(e) {
      if (!needs.has(e.url) || (e.data && e.data[FIELD])) return false;
      e.data = { ...e.data, [FIELD]: await take(e.url) };
      return true;
    },
    async retry(e, p) {
      const code = p && p.code;
      if (code !== 'challenge-required' && code !== 'challenge-invalid') return false;
      const n = /** @type {any} */ (e).solves || 0;
      if (n >= 3) return false;
      /** @type {any} */ (e).solves = n + 1;
      needs.add(e.url);
      const { [FIELD]: _, ...rest } = e.data || {};
      e.data = { ...rest, [FIELD]: await take(e.url) };
      return true;
    },
  };
}

/**
 * On the hosted page the altcha widget solves while the person fills the
 * form; this says its state in the page's live region (for screen
 * readers) and, on send, waits until the widget is done (or has failed:
 * the outbox then solves on its own).
 * @param {HTMLFormElement} el
 * @returns {() => Promise<void>} resolves when a send may read the form
 */
export function watchWidget(el) {
  const w = el.querySelector('altcha-widget');
  const live = el.querySelector('[data-formd-pow]');
  if (!w) return async () => {};
  /** @type {Record<string, string>} */
  let texts = {};
  try {
    texts = JSON.parse(w.getAttribute('strings') || '{}');
  } catch {}
  let state = 'unverified';
  /** @type {Set<() => void>} */
  const waiting = new Set();
  w.addEventListener('statechange', (ev) => {
    state = /** @type {CustomEvent} */ (ev).detail && /** @type {CustomEvent} */ (ev).detail.state;
    const t = { verifying: texts.verifying, verified: texts.verified, error: texts.error, expired: texts.expired }[state];
    if (live && t) live.textContent = t;
    if (state !== 'verifying') for (const f of Array.from(waiting)) f();
  });
  return () =>
    state === 'verifying' || state === 'unverified'
      ? new Promise((res) => {
          const done = () => {
            waiting.delete(done);
            res();
          };
          waiting.add(done);
          // Never hold a send for long: the outbox solves on its own.
          setTimeout(done, 20000);
        })
      : Promise.resolve();
}
