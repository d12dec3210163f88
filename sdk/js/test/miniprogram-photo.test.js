// The WeChat example's photo page (examples/miniprogram/pages/photo) in
// miniprogram-simulate, built as the developer tools would
// (miniprogram-sim.js): 选择照片 (wx.chooseMedia), the photo
// uploaded in chunks over wx.request with X-HTTP-Method-Override: PATCH
// against a fake tus server, the app sent to the background halfway (the
// chunk on its way is cut off and every request fails until it is back),
// and resumed on onAppShow from the offset the server holds: progress in
// the page, 上传中… then 已收到, the bytes the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { fakeWx } from './fake-wx.js';
import { until } from './fakes.js';
import { tusServer, wxAnswer, fakeFS } from './fake-tus.js';
import { examplePage } from './miniprogram-sim.js';

const MiB = 1 << 20;

const launch = examplePage('pages/photo/index');

test('photo page: chooseMedia, chunks with the method override, the app in the background halfway, resumed on onAppShow, 已收到', async () => {
  const photo = Uint8Array.from({ length: 2.5 * MiB }, (_, i) => (i * 13 + 1) & 255);
  const files = new Map([['wxfile://tmp_photo.jpg', photo]]);
  let background = false;
  /** @type {() => void} */
  let release = () => {};
  const gate = new Promise((r) => (release = () => r(undefined)));
  const s = tusServer(
    {
      patch: async (q, u, n) => {
        if (n !== 2) return undefined;
        // The second chunk is on its way: the page shows 40 %; then the
        // person switches apps, and WeChat cuts the request off.
        await gate;
        background = true;
        return { keep: 100000 };
      },
    },
    'exam-2027',
  );
  const seen = [];
  const wx = Object.assign(fakeWx({ answer: wxAnswer(s, () => background, seen) }), {
    getFileSystemManager: () => fakeFS(files),
    env: { USER_DATA_PATH: 'wxfile://usr' },
    /** What WeChat hands the page for one chosen photo. */
    chooseMedia: (o) => setImmediate(() => o.success({ type: 'image', tempFiles: [{ tempFilePath: 'wxfile://tmp_photo.jpg', size: photo.length, fileType: 'image', thumbTempFilePath: '', duration: 0, height: 0, width: 0 }], errMsg: 'chooseMedia:ok' })),
  });
  const p = await launch(wx);
  try {
    assert.equal(p.text('.title'), '考试报名');
    p.page.querySelector('#name').dispatchEvent('input', { detail: { value: '李雷' } });
    p.page.querySelector('#choose').dispatchEvent('tap');
    await until(() => p.text('#chosen') === '2560 KB', 'the chosen photo');
    p.page.querySelector('#submit').dispatchEvent('tap');
    await until(() => p.text('#status') === '上传中… 40%', '上传中… 40%');
    assert.equal(p.page.instance.data.progress, 40);
    assert.ok(p.page.querySelector('#progress'), 'a progress bar while uploading');
    release();
    await until(() => p.text('#status')?.startsWith('已保存在本机'), '已保存在本机 while in the background');
    assert.equal(p.page.querySelector('#progress'), undefined);
    const before = s.log.length;
    // Back to the foreground: onAppShow resumes at once.
    background = false;
    wx.show();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
    assert.deepEqual(s.log.slice(before).filter((l) => !l.startsWith('submit')), ['HEAD u1 1148576', 'PATCH u1 @1148576 +1048576', 'PATCH u1 @2197152 +424288']);
    assert.equal(s.received(), photo.length, 'resumed, not restarted');
    assert.equal(createHash('sha256').update(s.ups.get('u1').data).digest('hex'), createHash('sha256').update(photo).digest('hex'));
    assert.equal(s.ups.get('u1').meta.field, 'photo');
    const patches = seen.filter(([, o]) => o === 'PATCH');
    assert.ok(patches.length >= 4 && patches.every(([m, , ab]) => m === 'POST' && ab), 'every chunk a POST with the override, an ArrayBuffer body');
    assert.ok(![...files.keys()].some((k) => k.startsWith('wxfile://usr/')), 'the kept copy is deleted once received');
  } finally {
    p.close();
  }
});
