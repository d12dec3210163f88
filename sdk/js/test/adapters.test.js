// Unit tests of the mini-program adapter (fake wx and uni), the Web
// Storage outbox and the fetch transport (node --test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, miniProgram, localStorageStorage, browserStorage, fetchTransport, memoryStorage } from '../formd.js';
import { fakeClock, doc, settle } from './fakes.js';

const person = { name: '韩梅梅', phone: '13900139000' };

/**
 * A fake of the wx / uni API: storage that, like theirs, returns '' for a
 * missing key and keeps a copy of what it is given; request() that answers
 * through success/fail callbacks, later, as they do.
 */
function fakeMiniProgram({ answer, withAppShow = true }) {
  const store = new Map();
  const log = [];
  const api = {
    requests: [],
    netCbs: [],
    showCbs: [],
    log,
    store,
    request(o) {
      api.requests.push(o);
      log.push(`request ${o.method}`);
      setImmediate(() => {
        const r = answer(o, api.requests.length);
        if (r.fail) o.fail({ errMsg: r.fail });
        else o.success(r);
      });
      return { abort() {} };
    },
    getStorageSync: (k) => (store.has(k) ? structuredClone(store.get(k)) : ''),
    setStorageSync: (k, v) => {
      log.push('setStorageSync');
      store.set(k, structuredClone(v));
    },
    onNetworkStatusChange: (cb) => api.netCbs.push(cb),
    offNetworkStatusChange: (cb) => (api.netCbs = api.netCbs.filter((x) => x !== cb)),
  };
  if (withAppShow) {
    api.onAppShow = (cb) => api.showCbs.push(cb);
    api.offAppShow = (cb) => (api.showCbs = api.showCbs.filter((x) => x !== cb));
  }
  return api;
}

function mpClient(api, clock) {
  return createClient({
    endpoint: 'https://formd.test/',
    ...miniProgram(api),
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
  });
}

for (const name of ['wx', 'uni']) {
  test(`${name}: request mapping, outbox in storage before the request, removed after`, async () => {
    const api = fakeMiniProgram({
      withAppShow: name === 'wx',
      answer: (o) => ({ statusCode: 201, header: { 'Content-Type': 'application/json', Location: '/x' }, data: JSON.stringify(doc(o.header['Idempotency-Key'])) }),
    });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const ev = await client.submit('fair', person);
    assert.equal(ev.state, 'received');
    const o = api.requests[0];
    assert.equal(o.url, 'https://formd.test/v1/forms/fair/submissions');
    assert.equal(o.method, 'POST');
    assert.equal(o.header['Content-Type'], 'application/json');
    assert.equal(o.dataType, 'text', 'the SDK parses the body itself, problem+json included');
    assert.deepEqual(JSON.parse(o.data), person);
    assert.equal(o.timeout, 15000);
    assert.equal(api.log.indexOf('setStorageSync'), 0, 'stored before the request');
    assert.ok(api.log.indexOf('request POST') > 0);
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });

  test(`${name}: a failed request is kept, retried on reconnect with the same key`, async () => {
    let up = false;
    const api = fakeMiniProgram({
      withAppShow: name === 'wx',
      answer: (o) => (up ? { statusCode: 200, header: { 'idempotent-replayed': 'true' }, data: JSON.stringify(doc(o.header['Idempotency-Key'])) } : { fail: 'request:fail net::ERR_INTERNET_DISCONNECTED' }),
    });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const states = [];
    client.on((e) => states.push(e.state));
    const p = client.submit('fair', person);
    await settle();
    assert.deepEqual(states, ['sending', 'saved']);
    const saved = Object.values(api.getStorageSync('formd-outbox'));
    assert.equal(saved.length, 1);
    assert.deepEqual(saved[0].data, person);
    up = true;
    api.netCbs.forEach((cb) => cb({ isConnected: false }));
    await settle();
    assert.equal(api.requests.length, 1, 'not retried while still disconnected');
    api.netCbs.forEach((cb) => cb({ isConnected: true, networkType: 'wifi' }));
    assert.equal((await p).state, 'received');
    assert.equal(api.requests.length, 2);
    assert.equal(api.requests[1].header['Idempotency-Key'], saved[0].key);
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });

  test(`${name}: a timeout is reported as one, and the status is asked next`, async () => {
    const api = fakeMiniProgram({
      withAppShow: name === 'wx',
      answer: (o, n) => (n === 1 ? { fail: 'request:fail timeout' } : { statusCode: 200, header: {}, data: JSON.stringify(doc('k', 'waitlisted')) }),
    });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const p = client.submit('fair', person);
    await settle();
    await clock.advance(250);
    assert.equal((await p).state, 'waitlisted');
    assert.equal(api.requests[1].method, 'GET');
    assert.match(api.requests[1].url, /\/v1\/forms\/fair\/submissions\/[0-9a-f-]{36}$/);
  });

  test(`${name}: header lookup is case-insensitive (Retry-After)`, async () => {
    const api = fakeMiniProgram({
      withAppShow: name === 'wx',
      answer: (o, n) =>
        n === 1
          ? { statusCode: 503, header: { 'retry-after': '9' }, data: '{"code":"overloaded"}' }
          : { statusCode: 201, header: {}, data: JSON.stringify(doc('k')) },
    });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    client.submit('fair', person);
    await settle();
    assert.deepEqual(clock.pending(), [9000]);
  });

  test(`${name}: entries left by an earlier run are sent when the app starts`, async () => {
    const api = fakeMiniProgram({
      withAppShow: name === 'wx',
      answer: (o) => ({ statusCode: 201, header: {}, data: JSON.stringify(doc(o.header['Idempotency-Key'])) }),
    });
    api.setStorageSync('formd-outbox', { k1: { key: 'k1', form: 'fair', url: 'https://formd.test/v1/forms/fair/submissions', data: person, at: 1, tries: 0 } });
    const clock = fakeClock();
    mpClient(api, clock);
    await settle();
    assert.equal(api.requests.length, 1);
    assert.equal(api.requests[0].header['Idempotency-Key'], 'k1');
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });
}

test('wx: coming back to the app (onAppShow) retries at once', async () => {
  let up = false;
  const api = fakeMiniProgram({
    answer: (o) => (up ? { statusCode: 201, header: {}, data: JSON.stringify(doc('k')) } : { fail: 'request:fail' }),
  });
  const clock = fakeClock();
  const client = mpClient(api, clock);
  const p = client.submit('fair', person);
  await settle();
  up = true;
  api.showCbs.forEach((cb) => cb());
  assert.equal((await p).state, 'received');
  client.close();
  assert.equal(api.showCbs.length, 0);
  assert.equal(api.netCbs.length, 0);
});

/** A Web Storage fake (the subset the SDK uses). */
function fakeWebStorage() {
  const m = new Map();
  return {
    get length() {
      return m.size;
    },
    key: (i) => [...m.keys()][i] ?? null,
    getItem: (k) => (m.has(k) ? m.get(k) : null),
    setItem: (k, v) => m.set(k, String(v)),
    removeItem: (k) => m.delete(k),
    m,
  };
}

test('localStorage outbox: put, list, delete; other keys are left alone', async () => {
  const ls = fakeWebStorage();
  ls.setItem('other', 'x');
  ls.setItem('formd:broken', '{');
  const s = localStorageStorage(/** @type {any} */ (ls));
  const e = { key: 'k1', form: 'f', url: 'u', data: person, at: 1, tries: 0 };
  await s.put(e);
  assert.deepEqual(await s.list(), [e]);
  await s.delete('k1');
  assert.deepEqual(await s.list(), []);
  assert.equal(ls.getItem('other'), 'x');
});

test('browserStorage falls back to localStorage without IndexedDB, then to memory', async (t) => {
  const saved = { idb: globalThis.indexedDB, ls: globalThis.localStorage };
  t.after(() => {
    Object.defineProperty(globalThis, 'indexedDB', { value: saved.idb, configurable: true, writable: true });
    Object.defineProperty(globalThis, 'localStorage', { value: saved.ls, configurable: true, writable: true });
  });
  const ls = fakeWebStorage();
  Object.defineProperty(globalThis, 'indexedDB', {
    value: { open: () => { throw new Error('SecurityError'); } },
    configurable: true,
    writable: true,
  });
  Object.defineProperty(globalThis, 'localStorage', { value: ls, configurable: true, writable: true });
  const s = browserStorage();
  await s.put({ key: 'k', form: 'f', url: 'u', data: {}, at: 1, tries: 0 });
  assert.ok(ls.getItem('formd:k'), 'written to localStorage');

  Object.defineProperty(globalThis, 'localStorage', {
    get() {
      throw new Error('denied');
    },
    configurable: true,
  });
  const m = browserStorage();
  await m.put({ key: 'k2', form: 'f', url: 'u', data: {}, at: 1, tries: 0 });
  assert.equal((await m.list())[0].key, 'k2', 'kept in memory');
});

test('memoryStorage keeps copies, not the caller’s objects', async () => {
  const s = memoryStorage();
  const e = { key: 'k', form: 'f', url: 'u', data: { a: 1 }, at: 1, tries: 0 };
  await s.put(e);
  e.tries = 5;
  assert.equal((await s.list())[0].tries, 0);
});

test('fetchTransport: JSON body parsed, headers read, network error and timeout told apart', async () => {
  const ok = fetchTransport(async (url, init) => {
    assert.equal(init.credentials, 'omit');
    return new Response('{"status":"stored"}', { status: 201, headers: { 'Retry-After': '2' } });
  });
  const r = await ok({ method: 'POST', url: 'http://x', headers: {}, body: '{}', timeout: 1000 });
  assert.equal(r.status, 201);
  assert.equal(r.body.status, 'stored');
  assert.equal(r.header('retry-after'), '2');

  const down = fetchTransport(async () => {
    throw new TypeError('Failed to fetch');
  });
  await assert.rejects(down({ method: 'GET', url: 'http://x', headers: {}, timeout: 1000 }), (e) => e.timeout === false);

  // A server that never answers: the transport aborts it at the timeout.
  const hang = fetchTransport(
    (url, init) =>
      new Promise((_, rej) => init.signal.addEventListener('abort', () => rej(new DOMException('aborted', 'AbortError')))),
  );
  await assert.rejects(hang({ method: 'GET', url: 'http://x', headers: {}, timeout: 20 }), (e) => e.timeout === true);

  const text = fetchTransport(async () => new Response('<html>bad gateway</html>', { status: 502 }));
  assert.equal((await text({ method: 'GET', url: 'http://x', headers: {}, timeout: 1000 })).body, null);
});
