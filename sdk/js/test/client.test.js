// Unit tests of the client's outbox and retry logic, with a fake clock, a
// scripted transport and logging storage (node --test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, retryAfter, newKey, memoryStorage } from '../formd.js';
import { fakeClock, fakeTransport, loggingStorage, res, netErr, doc, opts, settle } from './fakes.js';

const URL_ = 'https://formd.test/v1/forms/fair/submissions';
const person = { name: 'Li Lei', phone: '13800138000', email: 'li@example.org' };

function setup(answer, more = {}, initial = []) {
  const log = [];
  const clock = fakeClock();
  const transport = fakeTransport(answer, log);
  const storage = loggingStorage(log, initial);
  const { o, wake } = opts(clock, transport, storage, { arrivals: false, ...more });
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
  // After the answer, the same data again is the same submission.
  assert.equal((await t.client.submit('fair', person)).key, ea.key);
  assert.equal(t.transport.calls.length, 1);
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

test('a storage that fails does not stop the submission, and the person is told it is not saved', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  t.storage.put = async () => {
    throw new Error('QuotaExceededError');
  };
  assert.equal((await t.client.submit('fair', person)).state, 'received');
  assert.deepEqual(t.states(), ['sending', 'unsaved', 'received']);
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

// Honesty (issue 8): "saved" only when the outbox write really reached
// durable storage.

test('saved is said only after a durable write; memory or a failed write says unsaved, and the send goes on', async (tt) => {
  const cases = [
    ['durable', (s) => s, 'saved'],
    ['memory only (put resolves false)', (s) => ({ ...s, put: async (e) => (await s.put(e), false) }), 'unsaved'],
    ['write refused (put rejects)', (s) => ({ ...s, put: async () => { throw new DOMException('quota', 'QuotaExceededError'); } }), 'unsaved'],
  ];
  for (const [name, wrap, want] of cases) {
    await tt.test(name, async () => {
      let n = 0;
      const log = [];
      const clock = fakeClock();
      const transport = fakeTransport((c) => {
        if (++n <= 2) throw netErr();
        return res(201, doc(c.key));
      }, log);
      const storage = wrap(loggingStorage(log));
      const { o } = opts(clock, transport, storage, { arrivals: false });
      const client = createClient(o);
      const states = [];
      client.on((e) => states.push(e.state));
      const p = client.submit('fair', person);
      await settle();
      await clock.advance(10000);
      assert.equal((await p).state, 'received', 'sent all the same');
      assert.equal(states.filter((s) => s === 'saved' || s === 'unsaved').length, 1, `told once: ${states}`);
      assert.ok(states.includes(want), `${states}`);
      assert.ok(!states.includes(want === 'saved' ? 'unsaved' : 'saved'), `${states}`);
      assert.equal(states.at(-1), 'received');
    });
  }
});

test('memoryStorage says it is not durable', async () => {
  const t = setup((c) => res(201, doc(c.key)), { storage: memoryStorage() });
  await t.client.submit('fair', person);
  assert.deepEqual(t.states(), ['sending', 'unsaved', 'received']);
});

test('a later write that succeeds turns unsaved into saved', async () => {
  let n = 0;
  const t = setup(() => {
    throw netErr();
  });
  const put = t.storage.put;
  t.storage.put = async (e) => {
    if (++n === 1) throw new Error('quota');
    return put(e);
  };
  t.client.submit('fair', person);
  await settle();
  assert.deepEqual(t.states(), ['sending', 'unsaved']);
  await t.clock.advance(250); // second try: its write (tries = 2) succeeds
  assert.deepEqual(t.states(), ['sending', 'unsaved', 'saved']);
  assert.equal(t.storage.map.size, 1);
});

// close() (issue 8): nothing runs after it.

test('close stops the send loop, the timers, the wake-ups and the listeners', async () => {
  let up = false;
  let unwoken = 0;
  const t = setup(
    (c) => {
      if (!up) throw netErr();
      return res(201, doc(c.key));
    },
    {},
  );
  t.client.submit('fair', person);
  await settle();
  await t.clock.advance(250);
  const calls = t.transport.calls.length;
  assert.equal(calls, 2);
  assert.ok(t.clock.pending().length > 0, 'a retry is waiting');
  t.client.close();
  assert.deepEqual(t.clock.pending(), [], 'no timer left');
  up = true;
  t.wake();
  await t.client.flush();
  await t.clock.advance(600000);
  assert.equal(t.transport.calls.length, calls, 'no request after close');
  assert.deepEqual(t.states(), ['sending', 'saved'], 'no state after close');
  assert.equal(t.storage.map.size, 1, 'the entry stays for the next client');
  await assert.rejects(t.client.submit('fair', { name: 'x' }), /closed/);
  void unwoken;
});

test('close during a request: its late answer changes nothing, the entry waits for the next client', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const t = setup(async (c) => {
    await gate;
    return res(201, doc(c.key));
  });
  t.client.submit('fair', person);
  await settle();
  t.client.close();
  release();
  await settle();
  await t.clock.advance(60000);
  assert.equal(t.transport.calls.length, 1);
  assert.deepEqual(t.states(), ['sending']);
  const [left] = [...t.storage.map.values()];
  assert.equal(left.tries, 1, 'a next client will ask the status first');
});

test('close stops the status polling after a 202', async () => {
  const t = setup((c) => (c.method === 'POST' ? res(202, doc(c.key, 'processing')) : res(200, doc(c.key, 'processing'))));
  await t.client.submit('fair', person);
  await t.clock.advance(1000);
  const gets = t.transport.calls.length;
  t.client.close();
  assert.deepEqual(t.clock.pending(), []);
  await t.clock.advance(600000);
  assert.equal(t.transport.calls.length, gets);
});

test('close ends a wait for Retry-After too', async () => {
  const t = setup(() => res(503, { code: 'overloaded' }, { 'Retry-After': '60' }));
  t.client.submit('fair', person);
  await settle();
  assert.deepEqual(t.clock.pending(), [60000]);
  t.client.close();
  assert.deepEqual(t.clock.pending(), []);
  await t.clock.advance(120000);
  assert.equal(t.transport.calls.length, 1);
});

test('close removes the wake-up listeners it registered', () => {
  let registered = 0;
  let removed = 0;
  const clock = fakeClock();
  const client = createClient({
    ...opts(clock, fakeTransport(() => res(201, {})), loggingStorage()).o,
    wake: () => {
      registered++;
      return () => removed++;
    },
  });
  client.close();
  client.close();
  assert.equal(registered, 1);
  assert.equal(removed, 1);
});

// The same submission (issue 8): presses with nothing changed reuse it.

test('presses 30 ms apart while one is on its way: one key, one request, received', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const t = setup(async (c) => {
    await gate;
    return res(201, doc(c.key));
  });
  const presses = [];
  for (let i = 0; i < 4; i++) {
    presses.push(t.client.submit('fair', { ...person, _ts: '1700000000000' }));
    await t.clock.advance(30);
  }
  release();
  const evs = await Promise.all(presses);
  assert.equal(t.transport.calls.length, 1);
  assert.equal(new Set(evs.map((e) => e.key)).size, 1);
  assert.ok(evs.every((e) => e.state === 'received'));
});

test('a press with nothing changed after the answer shows the first result and sends nothing', async (tt) => {
  for (const [status, body, want] of [
    [201, 'stored', 'received'],
    [201, 'waitlisted', 'waitlisted'],
    [409, { code: 'duplicate-entry' }, 'duplicate'],
  ]) {
    await tt.test(want, async () => {
      const t = setup((c) => res(status, typeof body === 'string' ? doc(c.key, body) : body));
      const first = await t.client.submit('fair', { ...person, _ts: '1' });
      // _ts (when the form was shown) is not a value the person typed.
      const again = await t.client.submit('fair', { ...person, _ts: '2' });
      assert.equal(again.state, want);
      assert.equal(again.key, first.key);
      assert.equal(t.transport.calls.length, 1, 'no new key, no request');
      assert.deepEqual(t.states(), ['sending', want, want], 'the first result is shown again');
      // An edit of the values is a new submission.
      await t.client.submit('fair', { ...person, name: 'Li Lei Jr.' });
      assert.equal(t.transport.calls.length, 2);
      assert.notEqual(t.transport.calls[1].key, first.key);
    });
  }
});

test('after closed, full, invalid or failed the same values are tried again with a new key (the answer may have changed)', async () => {
  let n = 0;
  const t = setup((c) => (++n === 1 ? res(410, { code: 'form-closed' }) : res(201, doc(c.key))));
  assert.equal((await t.client.submit('fair', person)).state, 'closed');
  const ev = await t.client.submit('fair', person);
  assert.equal(ev.state, 'received');
  assert.equal(t.transport.calls.length, 2);
  assert.notEqual(t.transport.calls[0].key, t.transport.calls[1].key);
});

test('a 202 then a final status: the remembered result is the final one', async () => {
  const t = setup((c) => (c.method === 'POST' ? res(202, doc(c.key, 'processing')) : res(200, doc(c.key, 'waitlisted'))));
  await t.client.submit('fair', person);
  await t.clock.advance(1000);
  assert.equal((await t.client.submit('fair', person)).state, 'waitlisted');
  assert.equal(t.transport.calls.filter((c) => c.method === 'POST').length, 1);
});

// A retry is never turned into a false final error (issue 8): the first
// outcome of a key is the one that counts.

const retried = [
  ['a timeout', () => netErr(true)],
  ['a network error', () => netErr(false)],
  ['a 503', () => res(503, { code: 'overloaded' })],
];
for (const [what, first] of retried) {
  for (const [status, code, want] of [
    [410, 'form-closed', 'closed'],
    [409, 'duplicate-entry', 'duplicate'],
    [409, 'capacity-reached', 'full'],
    [422, 'validation-failed', 'invalid'],
  ]) {
    test(`after ${what}, a ${status} ${code} is checked by status: found → its status, 404 → ${want}`, async () => {
      for (const found of [true, false]) {
        const seen = [];
        const t = setup((c) => {
          seen.push(c.method);
          const posts = seen.filter((m) => m === 'POST').length;
          if (c.method === 'POST' && posts === 1) {
            const r = first();
            if (r instanceof Error) throw r;
            return r;
          }
          if (c.method === 'POST') return res(status, { code, errors: [] });
          // The status lookup: after a timeout the first probe finds nothing
          // yet; the one after the error decides.
          if (seen.filter((m) => m === 'GET').length === 1 && what === 'a timeout') return res(404, { code: 'submission-not-found' });
          return found ? res(200, doc(c.key, 'stored')) : res(404, { code: 'submission-not-found' });
        });
        const p = t.client.submit('fair', person);
        for (let i = 0; i < 5; i++) await t.clock.advance(1000);
        const ev = await p;
        assert.equal(ev.state, found ? 'received' : want, `found=${found}: ${seen}`);
        assert.equal(seen.at(-1), 'GET', 'the error was checked against the status');
        assert.equal(t.storage.map.size, 0);
        assert.equal(new Set(t.transport.calls.filter((c) => c.key).map((c) => c.key)).size, 1);
      }
    });
  }
}

test('a definitive error to the first send is final at once (no status lookup)', async () => {
  const t = setup(() => res(410, { code: 'form-closed' }));
  assert.equal((await t.client.submit('fair', person)).state, 'closed');
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['POST']);
});

test('a resumed entry that was sent before: a 410 to its re-send is checked first', async () => {
  const left = { key: 'k-held', form: 'fair', url: URL_, data: person, at: 1, tries: 1 };
  let gets = 0;
  const t = setup((c) => {
    if (c.method === 'GET') return ++gets === 1 ? res(404, { code: 'submission-not-found' }) : res(200, doc('k-held', 'waitlisted'));
    return res(410, { code: 'form-closed' });
  }, {}, [left]);
  await settle();
  await t.clock.advance(1000);
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['GET', 'POST', 'GET']);
  assert.deepEqual(t.states(), ['sending', 'waitlisted']);
});

test('the status check of a held error keeps asking through failures', async () => {
  let n = 0;
  const t = setup(() => {
    n++;
    if (n === 1) throw netErr();
    if (n === 2) return res(410, { code: 'form-closed' });
    if (n === 3) return res(503, null);
    return res(404, { code: 'submission-not-found' });
  });
  const p = t.client.submit('fair', person);
  for (let i = 0; i < 5; i++) await t.clock.advance(2000);
  assert.equal((await p).state, 'closed');
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['POST', 'POST', 'GET', 'GET']);
});

// What the newer server says (issue 8, §5).

test('201 with status received (spam, kept but not counted) is received', async () => {
  const t = setup((c) => res(201, doc(c.key, 'received')));
  assert.equal((await t.client.submit('fair', person)).state, 'received');
});

test('200 replayed with the original entry of this participant (another key): its status decides, never duplicate', async () => {
  for (const [status, want] of [['stored', 'received'], ['waitlisted', 'waitlisted']]) {
    const t = setup(() => res(200, doc('the-first-key', status), { 'Idempotent-Replayed': 'true' }));
    const ev = await t.client.submit('fair', person);
    assert.equal(ev.state, want);
    assert.equal(ev.doc.key, 'the-first-key');
    assert.notEqual(ev.key, 'the-first-key', 'the event keeps the key this submission was sent with');
  }
});

test('a status lookup that says received is received', async () => {
  const left = { key: 'k-r', form: 'fair', url: URL_, data: person, at: 1, tries: 1 };
  const t = setup(() => res(200, doc('k-r', 'received')), {}, [left]);
  await settle();
  assert.deepEqual(t.states(), ['sending', 'received']);
});

// Issue 34: a page on a site the form's origins do not list reads the
// server's 403 origin-not-allowed; asking again will not change it.
const notHere = () => res(403, { code: 'origin-not-allowed', status: 403, detail: 'this form does not accept submissions from this origin' });

test('origin-not-allowed to the first send: failed at once, out of the outbox, not retried', async () => {
  const t = setup(notHere);
  const ev = await t.client.submit('fair', person);
  assert.equal(ev.state, 'failed');
  assert.equal(ev.problem.code, 'origin-not-allowed');
  assert.equal(t.storage.map.size, 0);
  await t.clock.advance(60000);
  assert.deepEqual(t.transport.calls.map((c) => c.method), ['POST']);
  assert.deepEqual(t.clock.pending(), []);
});

test('a resumed entry whose status lookup is origin-not-allowed: failed, not asked again', async () => {
  const left = { key: 'k-elsewhere', form: 'fair', url: URL_, data: person, at: 1, tries: 3 };
  const t = setup(notHere, {}, [left]);
  await settle();
  await t.clock.advance(60000);
  assert.deepEqual(t.transport.calls.map((c) => `${c.method} ${c.url}`), [`GET ${URL_}/k-elsewhere`]);
  assert.deepEqual(t.states(), ['sending', 'failed']);
  assert.equal(t.storage.map.size, 0);
});
