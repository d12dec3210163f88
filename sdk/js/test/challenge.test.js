// Unit tests of the proof-of-work solver (challenge.js): it solves ALTCHA
// v1 challenges as Node's crypto checks them, in slices between timers
// (the mini-program way: no Worker), and the client fetches, solves and
// re-solves through its own transport.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { createClient, miniProgram } from '../formd.js';
import { solveSliced, encodeSolution, challengeSolver } from '../challenge.js';
import { fakeClock, doc } from './fakes.js';
import { fakeWx } from './fake-wx.js';

const KEY = 'test-hmac-key';
const sha = (s) => createHash('sha256').update(s).digest('hex');

/** A challenge as formd makes one (internal/challenge). */
function issue(form, max, number = randomInt(max + 1)) {
  const salt = randomBytes(12).toString('hex') + `?expires=${Math.floor(Date.now() / 1000) + 600}&form=${form}&`;
  const challenge = sha(salt + number);
  return { algorithm: 'SHA-256', challenge, maxnumber: max, salt, signature: createHmac('sha256', KEY).update(challenge).digest('hex') };
}

/** Checks a solution as formd does. */
function valid(payload) {
  const p = JSON.parse(Buffer.from(payload, 'base64').toString());
  return p.algorithm === 'SHA-256' && sha(p.salt + p.number) === p.challenge && createHmac('sha256', KEY).update(p.challenge).digest('hex') === p.signature;
}

test('solveSliced finds the number formd hid, yielding between slices', async () => {
  for (let i = 0; i < 20; i++) {
    const c = issue('f', 3000);
    let slices = 0;
    const s = await solveSliced(c, { slice: 100, setTimeout: (f) => (slices++, setImmediate(f)) });
    assert.equal(sha(c.salt + s.number), c.challenge);
    assert.ok(valid(encodeSolution(c, s)));
    assert.equal(slices, Math.floor(s.number / 100), 'one timer per slice of 100 numbers before the one that held it');
  }
  // Multi-byte safety is not needed: salts are ASCII. A salt long enough to
  // need a second SHA-256 block still hashes right.
  const long = { ...issue('f', 50), salt: 'x'.repeat(70) + '?expires=1&form=f&' };
  long.challenge = sha(long.salt + 42);
  assert.equal((await solveSliced(long)).number, 42);
});

test('an impossible challenge rejects instead of spinning', async () => {
  const c = { ...issue('f', 200), challenge: 'ab'.repeat(32) };
  await assert.rejects(solveSliced(c, { slice: 50, setTimeout: (f) => setImmediate(f) }), /no solution/);
});

test('mini-program: the client solves on a challenge-required answer, with wx.request and timers only, and sends once more with the same key', async () => {
  const issued = [];
  const posts = [];
  const api = fakeWx({
    answer: (o) => {
      if (o.method === 'GET' && o.url.endsWith('/v1/forms/fair/challenge')) {
        const c = issue('fair', 4000, 1000 + randomInt(3000));
        issued.push(c);
        return { statusCode: 200, header: {}, data: JSON.stringify(c) };
      }
      const body = JSON.parse(o.data);
      posts.push({ key: o.header['Idempotency-Key'], body });
      if (!body.altcha) return { statusCode: 400, header: {}, data: JSON.stringify({ code: 'challenge-required', status: 400 }) };
      if (!valid(body.altcha)) return { statusCode: 403, header: {}, data: JSON.stringify({ code: 'challenge-invalid', status: 403 }) };
      return { statusCode: 201, header: {}, data: JSON.stringify(doc(o.header['Idempotency-Key'], 'stored', 'fair')) };
    },
  });
  const clock = fakeClock();
  let slices = 0;
  const mp = miniProgram(api);
  const client = createClient({
    endpoint: 'https://formd.test',
    ...mp,
    now: clock.now,
    setTimeout: clock.setTimeout,
    clearTimeout: clock.clearTimeout,
    random: () => 0.5,
    arrivals: false,
    // The default solver with smaller slices, to count them.
    challenge: challengeSolver({ transport: mp.transport, worker: false, slice: 200, setTimeout: (f, ms) => (slices++, clock.setTimeout(f, ms)), now: clock.now }),
  });
  const p = client.submit('fair', { name: '李雷' });
  let ev;
  p.then((e) => (ev = e));
  for (let i = 0; i < 200 && !ev; i++) await clock.advance(10);
  assert.equal(ev && ev.state, 'received');
  assert.equal(issued.length, 1);
  assert.equal(posts.length, 2);
  assert.equal(posts[0].key, posts[1].key, 'the same key');
  assert.equal(posts[0].body.altcha, undefined);
  assert.ok(valid(posts[1].body.altcha));
  assert.ok(slices >= 4, `solved in slices between timers (${slices})`);
  client.close();
});

test('prepare solves ahead; a stale solution is replaced at most three times', async () => {
  let n = 0;
  const transport = async (q) => {
    if (q.method === 'GET') return { status: 200, header: () => null, body: issue('f', 500) };
    throw new Error('not here');
  };
  const s = challengeSolver({ transport, worker: false, setTimeout: (f) => setImmediate(f) });
  const url = 'https://formd.test/v1/forms/f/submissions';
  const e = { key: 'k', form: 'f', url, data: { a: 1 }, at: 0, tries: 1 };
  assert.equal(s.wants(e), false, 'unknown forms are sent as they are');
  s.prepare(url);
  assert.equal(s.wants(e), true);
  assert.equal(await s.attach(e), true);
  assert.ok(valid(e.data.altcha));
  assert.equal(s.wants(e), false);
  for (; n < 3; n++) assert.equal(await s.retry(e, { code: 'challenge-invalid' }), true);
  assert.equal(await s.retry(e, { code: 'challenge-invalid' }), false, 'the fourth time it gives up');
  assert.equal(await s.retry({ ...e, solves: 0 }, { code: 'validation-failed' }), false);
});
