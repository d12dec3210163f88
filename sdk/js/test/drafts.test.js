// The drafts API (drafts.js) over the mini-program adapter's transport
// (wx.request through the fake wx that follows WeChat's typings): a draft
// saved, resumed elsewhere with its key and version, saved again with
// If-Match and Draft-Token, an older copy refused (412) without writing,
// and the submission's key is the draft's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { miniProgram, drafts, DraftError, createClient, memoryStorage } from '../miniprogram.js';
import { fakeWx } from './fake-wx.js';
import { draftServer } from './fake-drafts.js';

const ENDPOINT = 'https://forms.example.org';

test('mini-program: a draft saved, resumed on another device, saved again; the older copy refused with 412', async () => {
  const srv = draftServer();
  const phone = fakeWx({ answer: srv.answer });
  const api = drafts({ endpoint: ENDPOINT, transport: miniProgram(phone).transport });
  const first = await api.save({ form: 'fair', key: 'k-1', token: '', version: 0 }, { name: '李雷' });
  assert.equal(first.version, 1);
  assert.equal(first.token, 'tok-1');
  assert.equal(first.resumeURL, `${ENDPOINT}/f/fair?resume=tok-1`);
  const req = phone.fake.requests[0];
  assert.equal(req.method, 'PUT');
  assert.equal(req.url, `${ENDPOINT}/v1/forms/fair/drafts/k-1`);
  assert.equal(req.header['Draft-Token'], undefined, 'the first save has no token yet');

  // Another device opens the resume link's token.
  const laptop = fakeWx({ answer: srv.answer });
  const other = drafts({ endpoint: ENDPOINT, transport: miniProgram(laptop).transport });
  const resumed = await other.resume('fair', first.token);
  assert.deepEqual([resumed.key, resumed.version, resumed.data], ['k-1', 1, { name: '李雷' }]);
  const newer = await other.save(resumed, { name: '李雷', phone: '13800138000' });
  assert.equal(newer.version, 2);
  const sent = laptop.fake.requests.at(-1);
  assert.equal(sent.header['Draft-Token'], 'tok-1');
  assert.equal(sent.header['If-Match'], '"1"');

  // The phone's copy is older: refused, nothing written over the newer.
  await assert.rejects(api.save(first, { name: 'Li' }), (err) => err instanceof DraftError && err.status === 412 && err.code === 'draft-version-mismatch' && err.version === 2);
  assert.deepEqual(srv.byKey.get('k-1').data, { name: '李雷', phone: '13800138000' });

  // The submission goes under the draft's key and consumes it.
  const client = createClient({ endpoint: ENDPOINT, ...miniProgram(laptop), storage: memoryStorage(), arrivals: false, challenge: false });
  const ev = await client.submit('fair', { name: '李雷', phone: '13800138000' }, { key: resumed.key });
  client.close();
  assert.equal(ev.state, 'received');
  assert.equal(ev.key, 'k-1');
  assert.equal(ev.manage, `${ENDPOINT}/e/tok`, 'the result carries the participant\'s link as a URL');
  assert.equal(srv.byKey.has('k-1'), false);
  await assert.rejects(other.save(newer, { name: 'x' }), (err) => err instanceof DraftError && err.code === 'draft-submitted' && err.entryStatus === 'stored');
});

test('a save that gets no answer rejects with a network error, not a DraftError: nothing is known saved', async () => {
  const phone = fakeWx({ answer: () => ({ fail: 'offline' }) });
  const api = drafts({ endpoint: ENDPOINT, transport: miniProgram(phone).transport });
  await assert.rejects(api.save({ form: 'fair', key: 'k-2', token: '', version: 0 }, { name: 'x' }), (err) => !(err instanceof DraftError));
});

test('mail: the resume link is asked for with the draft\'s token and the page\'s language; a refusal is a DraftError with its code', async () => {
  /** @type {any[]} */
  const asked = [];
  let answer = { status: 200, body: { sent: true } };
  const api = drafts({
    endpoint: ENDPOINT,
    transport: async (q) => {
      asked.push(q);
      return { status: answer.status, header: () => null, body: answer.body };
    },
  });
  const d = { form: 'fair', key: 'k 1', token: 'tok-1', version: 2 };
  await api.mail(d, 'zh');
  assert.equal(asked[0].method, 'POST');
  assert.equal(asked[0].url, `${ENDPOINT}/v1/forms/fair/drafts/k%201/email`);
  assert.equal(asked[0].headers['Draft-Token'], 'tok-1');
  assert.equal(asked[0].headers['Accept-Language'], 'zh');
  for (const [status, code] of [[422, 'draft-no-email'], [429, 'draft-email-limited'], [502, 'draft-email-failed'], [503, 'email-not-configured']]) {
    answer = { status, body: { code } };
    await assert.rejects(api.mail(d), (err) => err instanceof DraftError && err.status === status && err.code === code);
  }
});
