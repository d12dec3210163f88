// Test doubles for the SDK's unit tests: a clock whose timers run only when
// the test advances it, a scripted server behind a fake transport, and
// storage that logs what it did, so that tests can check the order of
// "written to the outbox" and "sent".

/** Lets every pending promise callback run. */
export async function settle() {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

/** Polls check every 5 ms until it returns a truthy value, which it returns; fails after timeout ms. */
export async function until(check, what, timeout = 5000) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A manual clock: timers fire only inside advance(). */
export function fakeClock(start = 1_700_000_000_000) {
  let t = start;
  let seq = 0;
  /** @type {{id: number, at: number, f: () => void}[]} */
  let timers = [];
  return {
    now: () => t,
    setTimeout: (f, ms) => {
      const id = ++seq;
      timers.push({ id, at: t + Math.max(0, ms), f });
      return id;
    },
    clearTimeout: (id) => {
      timers = timers.filter((x) => x.id !== id);
    },
    /** The delays of the pending timers, from now. */
    pending: () => timers.map((x) => x.at - t).sort((a, b) => a - b),
    async advance(ms) {
      const end = t + ms;
      for (;;) {
        await settle();
        timers.sort((a, b) => a.at - b.at || a.id - b.id);
        const next = timers[0];
        if (!next || next.at > end) break;
        timers.shift();
        t = next.at;
        next.f();
      }
      t = end;
      await settle();
    },
  };
}

/** A response as the transport returns it. */
export function res(status, body = null, headers = {}) {
  const h = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
  return { status, body, header: (n) => h[n.toLowerCase()] ?? null };
}

/** A transport error as fetchTransport throws it. */
export function netErr(timeout = false) {
  return Object.assign(new Error(timeout ? 'timeout' : 'network error'), { timeout });
}

/**
 * A fake transport: answer(req, log) decides each request's fate (return a
 * response, or throw netErr()). Every request is recorded in calls and in
 * the shared log.
 */
export function fakeTransport(answer, log = []) {
  const calls = [];
  const t = async (req) => {
    const call = { ...req, data: req.body ? JSON.parse(req.body) : undefined, key: req.headers['Idempotency-Key'] };
    calls.push(call);
    log.push(`${req.method} ${req.url}`);
    return answer(call, calls.length);
  };
  t.calls = calls;
  return t;
}

/** In-memory storage that logs its operations into log. */
export function loggingStorage(log = [], initial = []) {
  const m = new Map(initial.map((e) => [e.key, structuredClone(e)]));
  return {
    map: m,
    put: async (e) => {
      log.push(`put ${e.key}`);
      m.set(e.key, structuredClone(e));
    },
    delete: async (k) => {
      log.push(`delete ${k}`);
      m.delete(k);
    },
    list: async () => [...m.values()].map((e) => structuredClone(e)),
  };
}

/** A status document as formd answers it. */
export function doc(key, status = 'stored', form = 'f') {
  return { id: 'id-' + key, form, key, status, received_at: '2027-03-01T09:00:00.000000Z', receipt: 'ab'.repeat(32) };
}

/** Options for createClient with the fakes, and no browser wake-ups. */
export function opts(clock, transport, storage, more = {}) {
  let wake = () => {};
  const o = {
    endpoint: 'https://formd.test',
    transport,
    storage,
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
    wake: (cb) => {
      wake = cb;
      return () => {};
    },
    ...more,
  };
  return { o, wake: () => wake() };
}

/** A 201 as a mini-program platform's request() hands it over (see fake-platform.js): the status document for the request's key. */
export const created = (o, status = 'stored') => ({ statusCode: 201, header: { 'Content-Type': 'application/json' }, data: JSON.stringify(doc(o.header['Idempotency-Key'], status)) });
