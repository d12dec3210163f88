// Unit tests of the client's outbox and retry logic, with a fake clock, a
// scripted transport and logging storage (node --test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, retryAfter, newKey } from '../formd.js';
import { fakeClock, fakeTransport, loggingStorage, res, netErr, doc, opts, settle } from './fakes.js';

const URL_ = 'https://formd.test/v1/forms/fair/submissions';
const person = { name: 'Li Lei', phone: '13800138000', email: 'li@example.org' };

function setup(answer, more = {}, initial = []) {
  const log = [];
  const clock = fakeClock();
  const transport = fakeTransport(answer, log);
  const storage = loggingStorage(log, initial);
  const { o, wake } = opts(clock, transport, storage, more);
  const client = createClient(o);
  const events = [];
  client.on((e) => events.push(e));
  return { log, clock, transport, storage, client, events, wake, states: () => events.map((e) => e.state) };
}

test('writes the outbox entry before the first send, and removes it on 201', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  const ev = await t.client.submit('fair', person);
  assert.equal(ev.state, 'received');
  const key = t.transport.calls[0].key;
  assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  assert.deepEqual(t.log, [`put ${key}`, `POST ${URL_}`, `delete ${key}`]);
  assert.deepEqual(t.states(), ['sending', 'received']);
  assert.equal(t.storage.map.size, 0);
  const c = t.transport.calls[0];
  assert.equal(c.headers['Content-Type'], 'application/json');
  assert.deepEqual(c.data, person);
  assert.equal(ev.doc.receipt, 'ab'.repeat(32));
});

test('waitlisted answer', async () => {
  const t = setup((c) => res(201, doc(c.key, 'waitlisted')));
  assert.equal((await t.client.submit('fair', person)).state, 'waitlisted');
});

test('network errors: saved, then retried with the same key and full-jitter backoff', async () => {
  let n = 0;
  const t = setup((c) => {
    if (++n <= 3) throw netErr();
    return res(201, doc(c.key));
  });
  const p = t.client.submit('fair', person);
  await settle();
  assert.deepEqual(t.states(), ['sending', 'saved']);
  // random() is 0.5: the waits are half of 500, 1000, 2000 ms.
  assert.deepEqual(t.clock.pending(), [250]);
  assert.ok(t.storage.map.size === 1, 'kept in the outbox while retrying');
  await t.clock.advance(249);
  assert.equal(t.transport.calls.length, 1);
  await t.clock.advance(1);
  assert.equal(t.transport.calls.length, 2);
  assert.deepEqual(t.clock.pending(), [500]);
  await t.clock.advance(500);
  assert.deepEqual(t.clock.pending(), [1000]);
  await t.clock.advance(1000);
  const ev = await p;
  assert.equal(ev.state, 'received');
  const keys = new Set(t.transport.calls.map((c) => c.key));
  assert.equal(keys.size, 1, 'one key for every try');
  assert.equal(t.transport.calls.length, 4);
  assert.equal(t.storage.map.size, 0);
});

test('backoff is capped and jittered over the whole range', async () => {
  const seen = [];
  let r = 0;
  const rnd = [0, 0.999, 0.25];
  const clock = fakeClock();
  const t = setup(() => {
    throw netErr();
  }, {
    random: () => rnd[r++ % 3],
    maxDelay: 3000,
    setTimeout: (f, ms) => {
      seen.push(ms);
      return clock.setTimeout(f, ms);
    },
    clearTimeout: clock.clearTimeout,
    now: clock.now,
  });
  t.client.submit('fair', person);
  await clock.advance(20000);
  // ceilings 500, 1000, 2000, 3000 (cap), 3000, … times 0, .999, .25
  assert.deepEqual(seen.slice(0, 7), [0, 999, 500, 0, 2997, 750, 0]);
});

for (const [status, code] of [[503, 'overloaded'], [429, 'rate-limited'], [503, 'journal-unavailable']]) {
  test(`${status} ${code}: Retry-After is honoured and a wake-up does not cut it short`, async () => {
    let n = 0;
    const t = setup((c) => (++n === 1 ? res(status, { code }, { 'Retry-After': '7' }) : res(201, doc(c.key))));
    const p = t.client.submit('fair', person);
    await settle();
    assert.deepEqual(t.states(), ['sending', 'saved']);
    assert.deepEqual(t.clock.pending(), [7000]);
    t.wake();
    await settle();
    assert.equal(t.transport.calls.length, 1, 'still waiting for Retry-After');
    await t.clock.advance(7000);
    assert.equal((await p).state, 'received');
    assert.equal(t.transport.calls[1].key, t.transport.calls[0].key);
  });
}

test('5xx without Retry-After is retried; Retry-After as an HTTP date', async () => {
  let n = 0;
  const clockNow = fakeClock().now();
  const when = new Date(clockNow + 4000).toUTCString();
  const t = setup((c) => {
    n++;
    if (n === 1) return res(500, null);
    if (n === 2) return res(502, null, { 'Retry-After': when });
    return res(201, doc(c.key));
  });
  const p = t.client.submit('fair', person);
  await settle();
  assert.deepEqual(t.clock.pending(), [250]);
  await t.clock.advance(250);
  assert.ok(t.clock.pending()[0] >= 3000 && t.clock.pending()[0] <= 4000, `waits for the date: ${t.clock.pending()}`);
  await t.clock.advance(4000);
  assert.equal((await p).state, 'received');
});

test('a wake-up (online, page visible) retries at once after a network error', async () => {
  let up = false;
  const t = setup((c) => {
    if (!up) throw netErr();
    return res(201, doc(c.key));
  });
  const p = t.client.submit('fair', person);
  await settle();
  await t.clock.advance(250);
  await settle();
  assert.equal(t.transport.calls.length, 2);
  up = true;
  t.wake();
  assert.equal((await p).state, 'received');
  assert.equal(t.transport.calls.length, 3, 'sent at the wake-up, before the backoff ended');
});

test('after a timeout the status is asked before re-sending: 404 then POST', async () => {
  let n = 0;
  const t = setup((c) => {
    n++;
    if (n === 1) throw netErr(true);
    if (n === 2) return res(404, { code: 'submission-not-found' });
    return res(201, doc(c.key));
  });
  const p = t.client.submit('fair', person);
  await settle();
  await t.clock.advance(250);
  assert.equal((await p).state, 'received');
  const calls = t.transport.calls.map((c) => `${c.method} ${c.url}`);
  const key = t.transport.calls[0].key;
  assert.deepEqual(calls, [`POST ${URL_}`, `GET ${URL_}/${key}`, `POST ${URL_}`]);
  assert.equal(t.transport.calls[2].key, key);
});

test('after a timeout, a status that says stored ends it without re-sending', async () => {
  let n = 0;
  let key;
  const t = setup((c) => {
    n++;
    if (n === 1) {
      key = c.key;
      throw netErr(true);
    }
    return res(200, doc(key, 'stored'));
  });
  const p = t.client.submit('fair', person);
  await settle();
  await t.clock.advance(250);
  const ev = await p;
  assert.equal(ev.state, 'received');
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['POST', 'GET']);
  assert.equal(t.storage.map.size, 0);
});

test('a probe that fails keeps probing until it gets an answer', async () => {
  let n = 0;
  let key;
  const t = setup((c) => {
    n++;
    if (n === 1) {
      key = c.key;
      throw netErr(true);
    }
    if (n === 2) return res(503, null);
    if (n === 3) throw netErr();
    return res(200, doc(key, 'duplicate'));
  });
  const p = t.client.submit('fair', person);
  for (let i = 0; i < 3; i++) {
    await settle();
    await t.clock.advance(t.clock.pending()[0] ?? 0);
  }
  assert.equal((await p).state, 'duplicate');
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['POST', 'GET', 'GET', 'GET']);
});

test('a double submit joins the one in flight: one entry, one request', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const t = setup(async (c) => {
    await gate;
    return res(201, doc(c.key));
  });
  const a = t.client.submit('fair', person);
  const b = t.client.submit('fair', { ...person });
  await settle();
  const c = t.client.submit('fair', person);
  release();
  const [ea, eb, ec] = await Promise.all([a, b, c]);
  assert.equal(t.transport.calls.length, 1);
  assert.equal(ea.key, eb.key);
  assert.equal(ea.key, ec.key);
  assert.equal(t.log.filter((l) => l.startsWith('put')).length, 1, 'one entry');
  // After the answer, the same data again is a new submission.
  await t.client.submit('fair', person);
  assert.equal(t.transport.calls.length, 2);
  assert.notEqual(t.transport.calls[1].key, ea.key);
});

test('definitive problems end the entry with the right state', async (tt) => {
  const cases = [
    [409, { code: 'duplicate-entry', title: 'Already registered' }, 'duplicate'],
    [409, { code: 'capacity-reached' }, 'full'],
    [410, { code: 'form-closed' }, 'closed'],
    [422, { code: 'validation-failed', errors: [{ field: 'phone', code: 'invalid-phone', message: 'is not a phone number' }] }, 'invalid'],
    [422, { code: 'idempotency-key-reused' }, 'failed'],
    [404, { code: 'form-not-found' }, 'failed'],
    [403, { code: 'origin-not-allowed' }, 'failed'],
    [400, { code: 'invalid-request' }, 'failed'],
    [413, { code: 'payload-too-large' }, 'failed'],
  ];
  for (const [status, body, want] of cases) {
    await tt.test(`${status} ${body.code}`, async () => {
      const t = setup(() => res(status, body));
      const ev = await t.client.submit('fair', person);
      assert.equal(ev.state, want);
      assert.equal(t.transport.calls.length, 1, 'not retried');
      assert.equal(t.storage.map.size, 0, 'left the outbox');
      if (want === 'invalid') assert.deepEqual(ev.errors, body.errors);
    });
  }
});

test('already registered: nothing of the person in the event', async () => {
  const t = setup((c) => res(409, { type: '/problems/duplicate-entry', title: 'Already registered', status: 409, code: 'duplicate-entry', key: c.key }));
  await t.client.submit('fair', person);
  const all = JSON.stringify(t.events);
  for (const v of Object.values(person)) assert.ok(!all.includes(v), `event leaks ${v}`);
});

test('202: received at once, the outbox lets go, the final state is polled', async () => {
  let polls = 0;
  const t = setup((c) => {
    if (c.method === 'POST') return res(202, doc(c.key, 'processing'), { 'Retry-After': '1' });
    polls++;
    return polls < 3 ? res(200, doc(c.key, 'processing'), { 'Retry-After': '1' }) : res(200, doc(c.key, 'waitlisted'));
  });
  const ev = await t.client.submit('fair', person);
  assert.equal(ev.state, 'received');
  assert.equal(ev.processing, true);
  assert.equal(t.storage.map.size, 0);
  await t.clock.advance(1000);
  await t.clock.advance(2000);
  await t.clock.advance(4000);
  assert.deepEqual(t.states(), ['sending', 'received', 'waitlisted']);
  assert.equal(polls, 3);
});

test('202 then a duplicate decision shows already registered', async () => {
  const t = setup((c) => (c.method === 'POST' ? res(202, doc(c.key, 'processing')) : res(200, doc(c.key, 'duplicate'))));
  await t.client.submit('fair', person);
  await t.clock.advance(1000);
  assert.deepEqual(t.states(), ['sending', 'received', 'duplicate']);
});

test('polling after 202 stops after pollFor', async () => {
  const t = setup((c) => (c.method === 'POST' ? res(202, doc(c.key, 'processing')) : res(200, doc(c.key, 'processing'))), { pollFor: 30000 });
  await t.client.submit('fair', person);
  await t.clock.advance(120000);
  const gets = t.transport.calls.filter((c) => c.method === 'GET').length;
  assert.ok(gets >= 3 && gets <= 8, `polled ${gets} times`);
  assert.deepEqual(t.clock.pending(), []);
});

test('on start, entries left in the outbox are sent with their own key', async () => {
  const left = { key: 'k-left-1', form: 'fair', url: URL_, data: person, at: 1, tries: 0 };
  const t = setup((c) => res(201, doc(c.key)), {}, [left]);
  await settle();
  assert.equal(t.transport.calls.length, 1);
  assert.equal(t.transport.calls[0].method, 'POST');
  assert.equal(t.transport.calls[0].key, 'k-left-1');
  assert.deepEqual(t.states(), ['sending', 'received']);
  assert.equal(t.storage.map.size, 0);
});

test('an entry that was being sent when the page went away is looked up first', async () => {
  const left = { key: 'k-left-2', form: 'fair', url: URL_, data: person, at: 1, tries: 1 };
  const t = setup(() => res(200, doc('k-left-2', 'stored')), {}, [left]);
  await settle();
  assert.deepEqual(t.transport.calls.map((c) => `${c.method} ${c.url}`), [`GET ${URL_}/k-left-2`]);
  assert.deepEqual(t.states(), ['sending', 'received']);
  assert.equal(t.storage.map.size, 0);
});

test('the same data submitted while a resumed entry is on its way joins it', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const left = { key: 'k-left-3', form: 'fair', url: URL_, data: person, at: 1, tries: 0 };
  const t = setup(async (c) => {
    await gate;
    return res(201, doc(c.key));
  }, {}, [left]);
  await settle();
  const p = t.client.submit('fair', person);
  release();
  assert.equal((await p).key, 'k-left-3');
  assert.equal(t.transport.calls.length, 1);
});

test('the try count is written before each send, so a reload knows to ask', async () => {
  const t = setup(() => {
    throw netErr();
  });
  t.client.submit('fair', person);
  await settle();
  const [e] = [...t.storage.map.values()];
  assert.equal(e.tries, 1);
  await t.clock.advance(250);
  assert.equal([...t.storage.map.values()][0].tries, 2);
});

test('a storage that fails does not stop the submission', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  t.storage.put = async () => {
    throw new Error('quota');
  };
  assert.equal((await t.client.submit('fair', person)).state, 'received');
});

test('a throwing listener does not stop the outbox', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  t.client.on(() => {
    throw new Error('listener bug');
  });
  assert.equal((await t.client.submit('fair', person)).state, 'received');
  // The error is rethrown on a timer of its own.
  await assert.rejects(t.clock.advance(0), /listener bug/);
});

test('retryAfter reads seconds and HTTP dates', () => {
  const now = Date.parse('2027-03-01T09:00:00Z');
  assert.equal(retryAfter('3', now), 3000);
  assert.equal(retryAfter('0', now), 0);
  assert.equal(retryAfter(null, now), 0);
  assert.equal(retryAfter('Mon, 01 Mar 2027 09:00:05 GMT', now), 5000);
  assert.equal(retryAfter('Mon, 01 Mar 2027 08:00:00 GMT', now), 0);
  assert.equal(retryAfter('soon', now), 0);
});

test('newKey falls back to getRandomValues and to Math.random', () => {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const real = globalThis.crypto;
  try {
    Object.defineProperty(globalThis, 'crypto', { value: { getRandomValues: (b) => real.getRandomValues(b) }, configurable: true });
    assert.match(newKey(), uuid);
    Object.defineProperty(globalThis, 'crypto', { value: undefined, configurable: true });
    const a = newKey();
    assert.match(a, uuid);
    assert.notEqual(a, newKey());
  } finally {
    Object.defineProperty(globalThis, 'crypto', { value: real, configurable: true });
  }
  assert.match(newKey(), uuid);
});
