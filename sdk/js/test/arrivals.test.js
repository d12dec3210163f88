// Unit tests of the arrival beacons (issue 10): for each key, "started"
// when the person pressed send and "answered" when the definitive answer
// came, kept in the outbox, batched to POST /v1/forms/{form}/arrivals,
// never ahead of or in the way of a submission, never shown to the person.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../formd.js';
import { fakeClock, fakeTransport, loggingStorage, res, netErr, doc, opts, settle } from './fakes.js';

const SUBS = 'https://formd.test/v1/forms/fair/submissions';
const ARRIVALS = 'https://formd.test/v1/forms/fair/arrivals';
const person = { name: 'Li Lei', phone: '13800138000' };

/** answer(call, n) for submissions; arrivals(call) for beacons (default 202). */
function setup(answer, { arrivals = () => res(202), initial = [], more = {} } = {}) {
  const log = [];
  const clock = fakeClock();
  const transport = fakeTransport((c, n) => (c.url.endsWith('/arrivals') ? arrivals(c) : answer(c, n)), log);
  const storage = loggingStorage(log, initial);
  const { o, wake } = opts(clock, transport, storage, more);
  const client = createClient(o);
  const events = [];
  client.on((e) => events.push(e));
  const beaconCalls = () => transport.calls.filter((c) => c.url === ARRIVALS);
  const beaconsStored = () => [...storage.map.values()].filter((e) => e.kind === 'arrival');
  return { log, clock, transport, storage, client, events, wake, beaconCalls, beaconsStored, states: () => events.map((e) => e.state) };
}

test('started and answered, in one batch, after the submission and its outbox write', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  const pressed = t.clock.now();
  const p = t.client.submit('fair', person);
  await settle();
  await t.clock.advance(950);
  const ev = await p;
  await t.clock.advance(1000);
  const [b] = t.beaconCalls();
  assert.ok(b, 'a beacon request');
  assert.equal(b.method, 'POST');
  assert.equal(b.headers['Content-Type'], 'application/json');
  assert.equal(b.headers['Idempotency-Key'], undefined);
  assert.deepEqual(b.data, {
    events: [
      { key: ev.key, type: 'started', at: pressed },
      { key: ev.key, type: 'answered', at: pressed, state: 'received' },
    ],
  });
  // The order on the device: the submission is written and sent first.
  const key = ev.key;
  assert.deepEqual(t.log.slice(0, 2), [`put ${key}`, `POST ${SUBS}`]);
  assert.ok(t.log.indexOf(`put arrival:${key}:started`) > t.log.indexOf(`POST ${SUBS}`));
  assert.ok(t.log.indexOf(`POST ${ARRIVALS}`) > t.log.indexOf(`delete ${key}`));
  assert.deepEqual(t.beaconsStored(), [], 'sent beacons leave the outbox');
  assert.deepEqual(t.states(), ['sending', 'received'], 'the person sees only the submission');
});

test('answered carries the final state and the time the answer came', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const t = setup(async () => {
    await gate;
    return res(409, { code: 'duplicate-entry' });
  });
  const p = t.client.submit('fair', person);
  await settle();
  await t.clock.advance(3000); // the answer takes 3 s
  release();
  const ev = await p;
  await t.clock.advance(1000);
  const events = t.beaconCalls().flatMap((c) => c.data.events);
  const answered = events.find((e) => e.type === 'answered');
  assert.equal(answered.state, 'duplicate');
  assert.equal(answered.key, ev.key);
  assert.equal(answered.at - events.find((e) => e.type === 'started').at, 3000);
});

test('beacons wait while a submission request is on its way', async () => {
  const gates = [];
  const t = setup((c) => new Promise((r) => gates.push(() => r(res(201, doc(c.key))))));
  const a = t.client.submit('fair', person);
  await settle();
  gates.shift()();
  await a;
  // A second submission goes out before the first one's beacons are due.
  const b = t.client.submit('fair', { ...person, name: 'Han Meimei' });
  await settle();
  await t.clock.advance(5000);
  assert.equal(t.beaconCalls().length, 0, 'nothing sent beside a submission in flight');
  gates.shift()();
  await b;
  await t.clock.advance(1000);
  assert.equal(t.beaconCalls().length, 1);
  assert.equal(t.beaconCalls()[0].data.events.length, 4, 'both keys, one batch');
});

test('a failing beacon is retried with backoff, kept in the outbox, and never shows a state', async () => {
  let n = 0;
  const t = setup((c) => res(201, doc(c.key)), {
    arrivals: () => {
      n++;
      if (n === 1) throw netErr();
      if (n === 2) return res(503, { code: 'overloaded' }, { 'Retry-After': '5' });
      return res(202);
    },
  });
  await t.client.submit('fair', person);
  await t.clock.advance(1000);
  assert.equal(n, 1);
  assert.equal(t.beaconsStored().length, 2, 'kept');
  await t.clock.advance(250);
  assert.equal(n, 2);
  await t.clock.advance(4999);
  assert.equal(n, 2, 'Retry-After honoured');
  await t.clock.advance(1);
  assert.equal(n, 3);
  assert.equal(t.beaconsStored().length, 0);
  assert.deepEqual(t.states(), ['sending', 'received']);
});

for (const status of [404, 405]) {
  test(`${status} from a server without the endpoint: beacons dropped silently, none sent again for that form`, async () => {
    const t = setup((c) => res(201, doc(c.key)), { arrivals: () => res(status, status === 404 ? { code: 'form-not-found' } : null) });
    await t.client.submit('fair', person);
    await t.clock.advance(1000);
    assert.equal(t.beaconCalls().length, 1);
    assert.equal(t.beaconsStored().length, 0, 'dropped from the outbox');
    await t.client.submit('fair', { ...person, name: 'Han Meimei' });
    await t.clock.advance(60000);
    assert.equal(t.beaconCalls().length, 1, 'not asked again');
    assert.ok(!t.log.some((l) => l.startsWith('put arrival:') && t.log.indexOf(l) > t.log.indexOf(`POST ${ARRIVALS}`)), 'none recorded after');
    assert.deepEqual(t.states().filter((s) => s !== 'sending'), ['received', 'received']);
  });
}

test('arrivals: false records and sends none', async () => {
  const t = setup((c) => res(201, doc(c.key)), { more: { arrivals: false } });
  await t.client.submit('fair', person);
  await t.clock.advance(60000);
  assert.equal(t.beaconCalls().length, 0);
  assert.ok(!t.log.some((l) => l.includes('arrival')));
});

test('beacons left in the outbox by an earlier page are sent, not taken for submissions', async () => {
  const left = [
    { key: 'arrival:k9:started', kind: 'arrival', form: 'fair', url: ARRIVALS, data: { key: 'k9', type: 'started', at: 5 }, at: 5, tries: 0 },
  ];
  const t = setup((c) => res(201, doc(c.key)), { initial: left });
  await settle();
  assert.deepEqual(await t.client.pending(), [], 'pending() lists submissions only');
  await t.clock.advance(1000);
  assert.deepEqual(t.transport.calls.map((c) => c.url), [ARRIVALS]);
  assert.deepEqual(t.beaconCalls()[0].data.events, [{ key: 'k9', type: 'started', at: 5 }]);
  assert.deepEqual(t.states(), []);
});

test('at most 100 events a request', async () => {
  const left = [];
  for (let i = 0; i < 130; i++) left.push({ key: `arrival:k${i}:started`, kind: 'arrival', form: 'fair', url: ARRIVALS, data: { key: `k${i}`, type: 'started', at: i }, at: i, tries: 0 });
  const t = setup(() => res(201, {}), { initial: left });
  await settle();
  await t.clock.advance(1000);
  assert.deepEqual(t.beaconCalls().map((c) => c.data.events.length), [100, 30]);
});

test('a beacon whose outbox write fails is still sent from memory, and the submission is unaffected', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  const put = t.storage.put;
  t.storage.put = async (e) => {
    if (e.kind) throw new Error('quota');
    return put(e);
  };
  assert.equal((await t.client.submit('fair', person)).state, 'received');
  await t.clock.advance(1000);
  assert.equal(t.beaconCalls()[0].data.events.length, 2);
  assert.deepEqual(t.states(), ['sending', 'received']);
});

test('a resumed entry gets an answered beacon, not a second started', async () => {
  const left = [{ key: 'k-old', form: 'fair', url: SUBS, data: person, at: 7, tries: 0 }];
  const t = setup((c) => res(201, doc(c.key)), { initial: left });
  await settle();
  await t.clock.advance(1000);
  assert.deepEqual(t.beaconCalls()[0].data.events.map((e) => e.type), ['answered']);
});

test('close stops the beacons too', async () => {
  const t = setup((c) => res(201, doc(c.key)));
  await t.client.submit('fair', person);
  t.client.close();
  assert.deepEqual(t.clock.pending(), []);
  await t.clock.advance(60000);
  assert.equal(t.beaconCalls().length, 0);
});

test('beacons that keep failing stop after eight tries in a row, and wait in the outbox', async () => {
  const t = setup((c) => res(201, doc(c.key)), {
    arrivals: () => {
      throw netErr();
    },
  });
  await t.client.submit('fair', person);
  await t.clock.advance(3600000);
  assert.equal(t.beaconCalls().length, 9, 'the first try and eight more');
  assert.deepEqual(t.clock.pending(), [], 'nothing more scheduled');
  assert.equal(t.beaconsStored().length, 2);
  t.wake();
  await t.clock.advance(1000);
  assert.equal(t.beaconCalls().length, 10, 'a wake-up tries again');
});
