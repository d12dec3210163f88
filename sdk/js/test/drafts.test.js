// The drafts API (drafts.js) over the mini-program adapter's transport
// (wx.request through the fake wx that follows WeChat's typings): a draft
// saved, resumed elsewhere with its key and version, saved again with
// If-Match and Draft-Token, an older copy refused (412) without writing,
// and the submission's key is the draft's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { miniProgram, drafts, DraftError, createClient, memoryStorage } from '../miniprogram.js';
import { fakeWx } from './fake-wx.js';

const ENDPOINT = 'https://forms.example.org';

/**
 * A small formd for drafts as DESIGN §4 words them: versions, a token
 * kept by its holder, 412 with the current version; a submission under a
 * draft's key consumes it.
 */
function draftServer() {
  /** @type {Map<string, {token: string, version: number, data: any}>} */
  const byKey = new Map();
  /** @type {Map<string, any>} */
  const submitted = new Map();
  let n = 0;
  const json = (statusCode, body, header = {}) => ({ statusCode, header: { 'Content-Type': 'application/json', ...header }, data: JSON.stringify(body) });
  return {
    byKey,
    submitted,
    /** @param {any} o */
    answer: (o) => {
      const h = Object.fromEntries(Object.entries(o.header || {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
      const m = /\/v1\/forms\/([^/]+)\/(drafts|submissions)(?:\/([^/?]+))?/.exec(o.url);
      if (!m) return json(404, { code: 'not-found' });
      const [, form, kind, rawKey] = m;
      if (kind === 'submissions') {
        if (o.url.endsWith('/arrivals')) return json(202, {});
        const key = h['idempotency-key'];
        byKey.delete(key);
        submitted.set(key, JSON.parse(o.data));
        return json(201, { id: 'sub_1', form, key, status: 'stored', received_at: '2027-03-01T09:00:00Z', receipt: 'ab', manage: '/e/tok' });
      }
      if (o.method === 'GET') {
        for (const [key, d] of byKey) if (d.token === h['draft-token']) return json(200, { form, key, version: d.version, data: d.data }, { ETag: `"${d.version}"` });
        return json(404, { code: 'draft-not-found' });
      }
      const key = decodeURIComponent(rawKey);
      if (submitted.has(key)) return json(409, { code: 'draft-submitted', entry_status: 'stored' });
      const d = byKey.get(key);
      if (!h['draft-token']) {
        if (d) return json(409, { code: 'draft-exists' });
        const token = 'tok-' + ++n;
        byKey.set(key, { token, version: 1, data: JSON.parse(o.data) });
        return json(201, { form, key, version: 1, resume: token }, { ETag: '"1"' });
      }
      if (!d || d.token !== h['draft-token']) return json(404, { code: 'draft-not-found' });
      if (h['if-match'] !== `"${d.version}"`) return json(412, { code: 'draft-version-mismatch', version: d.version }, { ETag: `"${d.version}"` });
      d.version++;
      d.data = JSON.parse(o.data);
      return json(200, { form, key, version: d.version }, { ETag: `"${d.version}"` });
    },
  };
}

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
