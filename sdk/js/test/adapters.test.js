// Unit tests of the mini-program adapter, the Web Storage outbox and the
// fetch transport (node --test). The fake wx and uni are typed by the
// platforms' official typings (fake-wx.js, fake-uni.js) and do what the
// platforms do: errMsg failures for timeouts, no network and a domain not
// in the legal list; storage that throws at its limit; network and
// app-show events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, miniProgram, localStorageStorage, browserStorage, fetchTransport, memoryStorage } from '../formd.js';
import { fakeClock, doc, settle, created } from './fakes.js';
import { fakeWx } from './fake-wx.js';
import { fakeUni } from './fake-uni.js';

const person = { name: '韩梅梅', phone: '13900139000' };
const FORM_URL = 'https://formd.test/v1/forms/fair/submissions';

/** A 201 answer for the request's key, as the platform hands it over. */

function mpClient(api, clock, more = {}) {
  return createClient({
    endpoint: 'https://formd.test/',
    ...miniProgram(api),
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
    arrivals: false,
    ...more,
  });
}

const platforms = { wx: fakeWx, uni: fakeUni };

for (const [name, make] of Object.entries(platforms)) {
  test(`${name}: request mapping, outbox in storage before the request, removed after`, async () => {
    const api = make({ answer: (o) => created(o) });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const ev = await client.submit('fair', person);
    assert.equal(ev.state, 'received');
    const o = api.fake.requests[0];
    assert.equal(o.url, FORM_URL);
    assert.equal(o.method, 'POST');
    assert.equal(o.header['Content-Type'], 'application/json');
    assert.equal(o.dataType, 'text', 'the SDK parses the body itself, problem+json included');
    assert.equal(o.responseType, 'text');
    assert.deepEqual(JSON.parse(o.data), person);
    assert.equal(o.timeout, 15000);
    assert.deepEqual(api.fake.log.slice(0, 2), ['setStorageSync', `request POST ${FORM_URL}`], 'stored before the request');
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });

  test(`${name}: offline, the entry is kept and sent on onNetworkStatusChange (connected) with the same key`, async () => {
    let up = false;
    const api = make({ answer: (o) => (up ? { statusCode: 200, header: { 'Idempotent-Replayed': 'true' }, data: JSON.stringify(doc(o.header['Idempotency-Key'])) } : { fail: 'offline' }) });
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
    api.offline();
    await settle();
    assert.equal(api.fake.requests.length, 1, 'not retried on a change that is still offline');
    api.online('4g');
    assert.equal((await p).state, 'received');
    assert.equal(api.fake.requests.length, 2);
    assert.equal(api.fake.requests[1].header['Idempotency-Key'], saved[0].key);
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });

  test(`${name}: onAppShow (back in the app) resends at once`, async () => {
    let up = false;
    const api = make({ answer: (o) => (up ? created(o) : { fail: 'offline' }) });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const p = client.submit('fair', person);
    await settle();
    up = true;
    api.show();
    assert.equal((await p).state, 'received');
    assert.equal(api.fake.requests.length, 2, 'sent at the show, before the backoff ended');
  });

  test(`${name}: "request:fail timeout" may have reached the server, so the status is asked next`, async () => {
    const api = make({ answer: (o, n) => (n === 1 ? { fail: 'timeout' } : { statusCode: 200, header: {}, data: JSON.stringify(doc('k', 'waitlisted')) }) });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const p = client.submit('fair', person);
    await settle();
    await clock.advance(250);
    assert.equal((await p).state, 'waitlisted');
    assert.equal(api.fake.requests[1].method, 'GET');
    assert.match(api.fake.requests[1].url, /\/v1\/forms\/fair\/submissions\/[0-9a-f-]{36}$/);
  });

  test(`${name}: a domain not in the legal list never reached the server: kept, saved, re-sent (not looked up), never failed`, async () => {
    let legal = false;
    const api = make({ answer: (o) => (legal ? created(o) : { fail: 'domain' }) });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const states = [];
    client.on((e) => states.push(e.state));
    const p = client.submit('fair', person);
    await settle();
    await clock.advance(250);
    await clock.advance(500);
    assert.deepEqual(states, ['sending', 'saved']);
    assert.equal(Object.keys(api.getStorageSync('formd-outbox')).length, 1, 'still in the outbox');
    assert.ok(api.fake.requests.every((r) => r.method === 'POST'), 'no status lookup for what never left');
    // The owner adds the domain and the person opens the app again.
    legal = true;
    api.show();
    assert.equal((await p).state, 'received');
  });

  test(`${name}: storage full (10 MB): setStorageSync throws, the person is told it is not saved, the send goes on`, async () => {
    let up = false;
    const api = make({ answer: (o) => (up ? created(o) : { fail: 'offline' }), quota: 64 * 1024 });
    api.setStorageSync('big', 'x'.repeat(64 * 1024 - 200));
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const states = [];
    client.on((e) => states.push(e.state));
    const p = client.submit('fair', { ...person, note: '很长的备注'.repeat(50) });
    await settle();
    assert.ok(api.fake.log.includes('setStorageSync failed'));
    assert.deepEqual(states, ['sending', 'unsaved'], 'never "saved"');
    assert.deepEqual(api.getStorageSync('formd-outbox'), '', 'nothing was written');
    up = true;
    api.online();
    assert.equal((await p).state, 'received', 'sent from memory all the same');
    assert.ok(!states.includes('saved'));
  });

  test(`${name}: header lookup is case-insensitive (Retry-After)`, async () => {
    const api = make({
      answer: (o, n) => (n === 1 ? { statusCode: 503, header: { 'retry-after': '9' }, data: '{"code":"overloaded"}' } : created(o)),
    });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    client.submit('fair', person);
    await settle();
    assert.deepEqual(clock.pending(), [9000]);
  });

  test(`${name}: entries left by an earlier run are sent when the app starts again`, async () => {
    const api = make({ answer: (o) => created(o) });
    api.setStorageSync('formd-outbox', { k1: { key: 'k1', form: 'fair', url: FORM_URL, data: person, at: 1, tries: 0 } });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    const states = [];
    client.on((e) => states.push(e.state));
    await settle();
    assert.equal(api.fake.requests.length, 1);
    assert.equal(api.fake.requests[0].header['Idempotency-Key'], 'k1');
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });

  test(`${name}: the system language picks the texts`, () => {
    const clock = fakeClock();
    assert.equal(mpClient(make({ answer: created }), clock).lang, 'zh');
    assert.equal(mpClient(make({ answer: created, language: 'en' }), clock).lang, 'en');
    assert.equal(mpClient(make({ answer: created, language: 'zh_TW' }), clock).lang, 'zh');
  });

  test(`${name}: close removes the network and app-show listeners and ends the retries`, async () => {
    const api = make({ answer: () => ({ fail: 'offline' }) });
    const clock = fakeClock();
    const client = mpClient(api, clock);
    client.submit('fair', person);
    await settle();
    assert.equal(api.fake.net.size, 1);
    assert.equal(api.fake.shows.size, 1);
    client.close();
    assert.equal(api.fake.net.size, 0);
    assert.equal(api.fake.shows.size, 0);
    assert.deepEqual(clock.pending(), []);
    api.online();
    api.show();
    await clock.advance(600000);
    assert.equal(api.fake.requests.length, 1);
  });

  test(`${name}: arrival beacons go through the same storage, after the submission`, async () => {
    const api = make({ answer: (o) => (o.url.endsWith('/arrivals') ? { statusCode: 202, header: {} } : created(o)) });
    const clock = fakeClock();
    const client = mpClient(api, clock, { arrivals: true });
    const ev = await client.submit('fair', person);
    const box = api.getStorageSync('formd-outbox');
    assert.deepEqual(Object.values(box).map((b) => b.kind), ['arrival', 'arrival'], 'the two beacons wait in the outbox');
    await clock.advance(1000);
    const [sub, beacons] = api.fake.requests;
    assert.equal(sub.url, FORM_URL);
    assert.equal(beacons.url, 'https://formd.test/v1/forms/fair/arrivals');
    assert.deepEqual(JSON.parse(beacons.data).events.map((e) => [e.key, e.type, e.state]), [[ev.key, 'started', undefined], [ev.key, 'answered', 'received']]);
    assert.deepEqual(api.getStorageSync('formd-outbox'), {});
  });
}

test('without getAppBaseInfo (older base libraries) the language comes from getSystemInfoSync', () => {
  const api = fakeWx({ answer: created, language: 'zh_CN' });
  delete api.getAppBaseInfo;
  assert.equal(miniProgram(api).lang, 'zh_CN');
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
  assert.notEqual(await s.put({ key: 'k', form: 'f', url: 'u', data: {}, at: 1, tries: 0 }), false);
  assert.ok(ls.getItem('formd:k'), 'written to localStorage');

  Object.defineProperty(globalThis, 'localStorage', {
    get() {
      throw new Error('denied');
    },
    configurable: true,
  });
  const m = browserStorage();
  assert.equal(await m.put({ key: 'k2', form: 'f', url: 'u', data: {}, at: 1, tries: 0 }), false, 'says it is memory only');
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

test('localStorage full (QuotaExceededError): put rejects, so the client says unsaved', async () => {
  const ls = fakeWebStorage();
  ls.setItem = () => {
    throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
  };
  const s = localStorageStorage(/** @type {any} */ (ls));
  await assert.rejects(s.put({ key: 'k', form: 'f', url: 'u', data: {}, at: 1, tries: 0 }), /quota/);
});
