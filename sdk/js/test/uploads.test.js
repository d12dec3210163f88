// Unit tests of the outbox's file uploads (uploads.js through formd.js):
// a fake tus 1.0 server that keeps each upload's bytes and checks every
// offset as formd does (409 on a wrong one), a fake clock, and storage
// that keeps Blobs (structuredClone, as IndexedDB does). The real server
// and Chromium are in e2e/uploads.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createClient, memoryStorage, localStorageStorage } from '../formd.js';
import * as uploadsModule from '../uploads.js';
import { miniProgram } from '../miniprogram.js';
import { b64, resolve } from '../uploads.js';
import { fakeClock, loggingStorage, res, opts, settle, until } from './fakes.js';
import { fakeWx } from './fake-wx.js';
import { fakeUni } from './fake-uni.js';
import { tusServer, SUBS, BASE, wxAnswer, fakeFS } from './fake-tus.js';


/** size bytes of a repeatable pattern. */
const bytes = (size) => Uint8Array.from({ length: size }, (_, i) => (i * 7 + 3) & 255);
const sha = (b) => createHash('sha256').update(b).digest('hex');

/** Storage that clones as IndexedDB does (Blobs kept), logging puts. */
function blobStorage(log = []) {
  const s = loggingStorage(log);
  return s;
}

function setup(server, more = {}, storage = blobStorage()) {
  const clock = fakeClock();
  const { o, wake } = opts(clock, server.transport, storage, { arrivals: false, chunkSize: 256, ...more });
  const client = createClient(o);
  const events = [];
  client.on((e) => events.push(e));
  return { clock, client, events, storage, wake, o, states: () => events.map((e) => e.state) };
}

test('a file is kept, uploaded in chunks, then named in the submission under the same key', async () => {
  const s = tusServer();
  const t = setup(s);
  const b = bytes(1000);
  const photo = new File([b], 'photo.jpg', { type: 'image/jpeg' });
  const ev = await t.client.submit('fair', { name: 'Li Lei', photo });
  assert.equal(ev.state, 'received');
  assert.deepEqual(s.log, ['create u1 photo photo.jpg', 'PATCH u1 @0 +256', 'PATCH u1 @256 +256', 'PATCH u1 @512 +256', 'PATCH u1 @768 +232', 'submit']);
  assert.deepEqual(ev.doc.data, { name: 'Li Lei', photo: 'upload:u1' });
  assert.equal(sha(s.ups.get('u1').data), sha(b));
  const up = t.events.filter((e) => e.state === 'uploading').map((e) => e.progress);
  assert.deepEqual(up, [0, 25, 51, 76, 100]);
  assert.ok(t.events.every((e) => e.key === ev.key), 'one key throughout');
  assert.equal(t.storage.map.size, 0, 'the outbox let go');
});

test('the upload address is in the outbox before the first byte is sent', async () => {
  const log = [];
  const s = tusServer({
    patch: (q, u, n) => {
      if (n === 1) {
        const e = [...storage.map.values()][0];
        log.push(e.files.photo[0].url);
        assert.ok(e.files.photo[0].blob instanceof Blob, 'the Blob is kept with the entry');
      }
    },
  });
  const storage = blobStorage();
  const t = setup(s, {}, storage);
  await t.client.submit('fair', { photo: new Blob([bytes(300)], { type: 'image/png' }) });
  assert.deepEqual(log, [BASE + '/v1/forms/fair/uploads/u1']);
});

test('a dropped connection mid-upload: saved, then resumed from the offset the server gives, not from 0', async () => {
  const s = tusServer({ patch: (q, u, n) => (n === 3 ? { keep: 100 } : undefined) });
  const t = setup(s);
  const b = bytes(1000);
  const p = t.client.submit('fair', { photo: new File([b], 'cv.pdf', { type: 'application/pdf' }) });
  await until(() => t.states().includes('saved'), 'saved after the drop');
  await t.clock.advance(60000);
  const ev = await p;
  assert.equal(ev.state, 'received');
  assert.deepEqual(s.log, [
    'create u1 photo cv.pdf',
    'PATCH u1 @0 +256',
    'PATCH u1 @256 +256',
    'PATCH u1 @512 cut after 100',
    'HEAD u1 612',
    'PATCH u1 @612 +256',
    'PATCH u1 @868 +132',
    'submit',
  ]);
  assert.equal(s.received(), 1000, 'no byte sent twice');
  assert.equal(sha(s.ups.get('u1').data), sha(b));
});

test('a reload mid-upload: a new client resumes the kept upload from the outbox', async () => {
  const storage = blobStorage();
  let stop = () => {};
  const s = tusServer({ patch: (q, u, n) => (n === 3 ? (stop(), { keep: 0 }) : undefined) });
  const first = setup(s, {}, storage);
  stop = () => first.client.close();
  first.client.submit('fair', { photo: new File([bytes(1000)], 'id.png', { type: 'image/png' }) });
  await until(() => s.log.length === 4, 'the third PATCH');
  await settle();
  assert.equal(storage.map.size, 1, 'the entry is still in the outbox');
  const key = [...storage.map.keys()][0];
  const second = setup(s, {}, storage);
  await until(() => s.log.includes('submit'), 'the submission from the new client');
  await until(() => second.states().includes('received'), 'received');
  assert.deepEqual(s.log.slice(3), ['PATCH u1 @512 cut after 0', 'HEAD u1 512', 'PATCH u1 @512 +256', 'PATCH u1 @768 +232', 'submit']);
  assert.equal(second.events.at(-1).key, key, 'the same key');
  assert.equal(s.ups.size, 1, 'one upload, not a second');
});

test('an upload the server no longer knows (expired) is made again from the kept file', async () => {
  const s = tusServer({ patch: (q, u, n) => (n === 2 ? { keep: 10 } : undefined) });
  const t = setup(s);
  const p = t.client.submit('fair', { photo: new File([bytes(600)], 'a.jpg', { type: 'image/jpeg' }) });
  await until(() => t.states().includes('saved'), 'saved');
  s.ups.delete('u1');
  await t.clock.advance(60000);
  const ev = await p;
  assert.equal(ev.state, 'received');
  assert.deepEqual(ev.doc.data, { photo: 'upload:u2' });
  assert.ok(s.log.includes('HEAD u1 404'));
  assert.equal(sha(s.ups.get('u2').data), sha(bytes(600)));
});

test('the submission answered upload-not-found: uploads made again, the same key sent again', async () => {
  let once = true;
  const keys = [];
  const s = tusServer({
    submit: (q) => {
      keys.push(q.headers['Idempotency-Key']);
      if (once) {
        once = false;
        return res(422, { code: 'upload-not-found', status: 422 });
      }
    },
  });
  const t = setup(s);
  const ev = await t.client.submit('fair', { photos: [new File([bytes(10)], 'a.jpg'), new File([bytes(20)], 'b.jpg')] });
  assert.equal(ev.state, 'received');
  assert.deepEqual(ev.doc.data, { photos: ['upload:u3', 'upload:u4'] }, 'a list stays a list');
  assert.equal(keys.length, 2);
  assert.equal(keys[0], keys[1]);
});

test('a file the field does not take: invalid, the field named, the texts for it', async () => {
  const s = tusServer({ finish: () => res(422, { code: 'file-rejected', status: 422, detail: 'field photo does not accept this file: its bytes are application/x-msdownload' }) });
  const t = setup(s);
  const ev = await t.client.submit('fair', { photo: new File([bytes(100)], 'photo.jpg', { type: 'image/jpeg' }) });
  assert.equal(ev.state, 'invalid');
  assert.deepEqual(ev.errors.map((e) => [e.field, e.code]), [['photo', 'file-rejected']]);
  assert.equal(ev.problem.code, 'file-rejected');
  assert.ok(!s.log.includes('submit'), 'never submitted');
});

test('too large at creation (413): invalid, file-too-large', async () => {
  const s = tusServer({ create: () => res(413, { code: 'payload-too-large', status: 413 }) });
  const t = setup(s);
  const ev = await t.client.submit('fair', { photo: new File([bytes(100)], 'big.jpg') });
  assert.equal(ev.state, 'invalid');
  assert.deepEqual(ev.errors.map((e) => [e.field, e.code]), [['photo', 'file-too-large']]);
});

test('storage full (503 Retry-After): saved with the problem, the wait the server asked for honoured', async () => {
  let full = true;
  let tries = 0;
  const s = tusServer({ patch: () => (tries++, full ? res(503, { code: 'upload-unavailable', status: 503 }, { 'Retry-After': '7' }) : undefined) });
  const t = setup(s);
  const p = t.client.submit('fair', { photo: new File([bytes(100)], 'p.jpg') });
  await until(() => t.states().includes('saved'), 'saved');
  const saved = t.events.find((e) => e.state === 'saved');
  assert.equal(saved.problem.code, 'upload-unavailable');
  assert.ok(saved.retryIn >= 7000, `retryIn ${saved.retryIn}`);
  t.wake();
  await t.clock.advance(6000);
  assert.equal(tries, 1, 'no try before Retry-After, even on a wake-up');
  full = false;
  await t.clock.advance(60000);
  assert.equal((await p).state, 'received');
});

test('in memory only (no IndexedDB): unsaved; Web Storage cannot hold the bytes either', async () => {
  const s = tusServer();
  const t = setup(s, {}, memoryStorage());
  const ev = await t.client.submit('fair', { photo: new File([bytes(50)], 'p.jpg') });
  assert.equal(ev.state, 'received');
  assert.ok(t.states().includes('unsaved'));
  const m = new Map();
  const ls = { get length() { return m.size; }, key: (i) => [...m.keys()][i], getItem: (k) => m.get(k) ?? null, setItem: (k, v) => m.set(k, v), removeItem: (k) => m.delete(k) };
  assert.equal(await localStorageStorage(/** @type {any} */ (ls)).put({ key: 'k', form: 'f', url: SUBS, data: {}, at: 0, tries: 0, files: { p: [] } }), false);
});

test('a file lost from the device (an outbox restored without its bytes): failed, with its own text', async () => {
  const s = tusServer();
  const storage = blobStorage();
  storage.map.set('k1', { key: 'k1', form: 'fair', url: SUBS, data: {}, files: { photo: [{ name: 'p.jpg', type: '', size: 5, blob: {} }] }, at: 0, tries: 0 });
  const t = setup(s, {}, storage);
  await until(() => t.states().includes('failed'), 'failed');
  assert.equal(t.events.at(-1).problem.code, 'upload-file-lost');
});

test('helpers: tus metadata base64 of UTF-8, Location resolved against the endpoint', () => {
  assert.equal(b64('照片.jpg'), Buffer.from('照片.jpg').toString('base64'));
  assert.equal(b64('ab'), 'YWI=');
  assert.equal(resolve('/v1/forms/f/uploads/x', 'https://a.example:8443/v1/forms/f/submissions'), 'https://a.example:8443/v1/forms/f/uploads/x');
  assert.equal(resolve('https://b.example/u/1', 'https://a.example/v1'), 'https://b.example/u/1');
  assert.equal(typeof uploadsModule.upload, 'function');
});

// WeChat: chooseMedia's file, chunks read with the file system manager,
// PATCH sent as POST with X-HTTP-Method-Override, and the app sent to the
// background mid-upload (requests fail while it is), resumed on onAppShow.
for (const [platform, make] of Object.entries({ wx: fakeWx, uni: fakeUni })) test(`${platform}: chunks over request() with the method override, resumed on onAppShow after the background`, async () => {
  const file = bytes(700);
  const files = new Map([['wxfile://tmp/photo.jpg', file]]);
  let background = false;
  let patches = 0;
  const s = tusServer({
    patch: () => {
      patches++;
      if (patches === 2) {
        background = true;
        return { keep: 64 };
      }
    },
  });
  const seen = [];
  const wx = make({ answer: wxAnswer(s, () => background, seen) });
  const fsm = fakeFS(files);
  const api = Object.assign(wx, { getFileSystemManager: () => fsm, env: { USER_DATA_PATH: 'wxfile://usr' } });
  const clock = fakeClock();
  const client = createClient({ endpoint: BASE, ...miniProgram(api), now: clock.now, setTimeout: clock.setTimeout, clearTimeout: clock.clearTimeout, random: () => 0.5, arrivals: false, chunkSize: 256 });
  const events = [];
  client.on((e) => events.push(e));
  // What chooseMedia hands the page.
  const p = client.submit('fair', { name: '李雷', photo: { tempFilePath: 'wxfile://tmp/photo.jpg', size: 700, fileType: 'image' } });
  await until(() => events.some((e) => e.state === 'saved'), 'saved while in the background');
  const kept = [...files.keys()].find((k) => k.startsWith('wxfile://usr/formd-'));
  assert.ok(kept, 'the chosen file is copied under the user data path');
  // Still in the background: a timer's retry fails again.
  await clock.advance(2000);
  background = false;
  wx.show();
  const ev = await p;
  assert.equal(ev.state, 'received');
  assert.deepEqual(ev.doc.data, { name: '李雷', photo: 'upload:u1' });
  assert.equal(s.received(), 700, 'resumed, not restarted');
  assert.ok(s.log.includes('HEAD u1 320'), s.log.join('\n'));
  assert.equal(sha(s.ups.get('u1').data), sha(file));
  const patchCalls = seen.filter(([m, o]) => o === 'PATCH');
  assert.ok(patchCalls.length >= 3 && patchCalls.every(([m, , ab]) => m === 'POST' && ab), 'PATCH is a POST with the override and an ArrayBuffer body');
  assert.ok(!seen.some(([m]) => m === 'PATCH'), 'wx.request never gets PATCH');
  assert.ok(events.some((e) => e.state === 'uploading' && e.progress > 0 && e.progress < 100));
  assert.equal(files.has(kept), false, 'the kept copy is deleted once received');
  client.close();
});

test('a file path without the platform file access (formd.js miniProgram, not miniprogram.js): failed, saying what to use', async () => {
  const s = tusServer();
  const t = setup(s);
  const ev = await t.client.submit('fair', { photo: { tempFilePath: 'wxfile://tmp/a.jpg', size: 10 } });
  assert.equal(ev.state, 'failed');
  assert.equal(ev.problem.code, 'upload-no-file-access');
  assert.match(ev.problem.detail, /miniprogram\.js/);
  assert.deepEqual(s.log, [], 'nothing sent');
});

test('a form that asks for a proof-of-work gets a solution of its own with each upload', async () => {
  const used = [];
  const s = tusServer({
    create: (q) => {
      const m = /(?:^|,)altcha ([^,]+)/.exec(q.headers['Upload-Metadata']);
      const sol = m ? Buffer.from(m[1], 'base64').toString() : '';
      if (!sol) return res(400, { code: 'challenge-required', status: 400 });
      if (used.includes(sol)) return res(403, { code: 'challenge-invalid', status: 403 });
      used.push(sol);
    },
  });
  const wanted = new Set();
  let n = 0;
  const solver = {
    prepare: (url) => wanted.add(url),
    needs: (url) => wanted.has(url),
    take: async () => 'solution-' + ++n,
    wants: (e) => wanted.has(e.url) && !e.data.altcha,
    attach: async (e) => {
      if (!wanted.has(e.url) || e.data.altcha) return false;
      e.data = { ...e.data, altcha: 'solution-' + ++n };
      return true;
    },
    retry: async () => false,
  };
  const t = setup(s, { challenge: solver });
  const photo = new File([bytes(300)], 'photo.jpg', { type: 'image/jpeg' });
  const ev = await t.client.submit('fair', { name: 'Li Lei', photo });
  assert.equal(ev.state, 'received');
  // Refused without one, made with the first solution; the submission
  // carries another.
  assert.deepEqual(used, ['solution-1']);
  assert.equal(ev.doc.data.altcha, 'solution-2');
  assert.deepEqual(s.log.filter((l) => l.startsWith('create')), ['create u1 photo photo.jpg']);
});
