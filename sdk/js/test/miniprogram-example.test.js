// The WeChat example's registration page (examples/miniprogram) in
// miniprogram-simulate (miniprogram-sim.js), with the fake wx that follows
// the official typings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeWx } from './fake-wx.js';
import { doc, until, created } from './fakes.js';
import { examplePage } from './miniprogram-sim.js';
import { draftServer } from './fake-drafts.js';

const FORM = 'https://forms.example.org/v1/forms/spring-fair-2027/submissions';

const open = examplePage('pages/register/index');

/** Opens the registration page, with its form's input and its button. */
async function launch(wx, query) {
  const p = await open(wx, query);
  const type = (id, value) => p.page.querySelector('#' + id).dispatchEvent('input', { detail: { value } });
  const press = () => p.page.querySelector('#submit').dispatchEvent('tap');
  /** Chooses a radio button of a radio group (a select of the definition). */
  const choose = (id, value) => p.page.querySelector('#' + id).dispatchEvent('change', { detail: { value } });
  return { ...p, type, press, choose };
}

/**
 * A small formd: stores each key once, answers the status by key; while
 * up() is false every request fails as on a phone without network.
 */
function fakeFormd(up) {
  const stored = new Map();
  return {
    stored,
    answer: (o) => {
      if (!up()) return { fail: 'offline' };
      if (o.url.endsWith('/arrivals')) return { statusCode: 202, header: {} };
      if (o.method === 'GET') {
        const key = decodeURIComponent(o.url.split('/').pop());
        return stored.has(key) ? { statusCode: 200, header: {}, data: JSON.stringify(stored.get(key)) } : { statusCode: 404, header: {}, data: '{"code":"submission-not-found"}' };
      }
      const key = o.header['Idempotency-Key'];
      if (stored.has(key)) return { statusCode: 200, header: { 'Idempotent-Replayed': 'true' }, data: JSON.stringify(stored.get(key)) };
      stored.set(key, doc(key));
      return { statusCode: 201, header: {}, data: JSON.stringify(stored.get(key)) };
    },
  };
}

test('a registration in Chinese: 发送中, then 已收到, one request', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const wx = fakeWx({
    answer: async (o) => {
      if (o.url.endsWith('/arrivals')) return { statusCode: 202 };
      await gate;
      return created(o);
    },
  });
  const p = await launch(wx);
  try {
    assert.equal(p.text('.title'), '春季集市报名');
    p.type('name', '李雷');
    p.type('phone', '13800138000');
    p.press();
    await until(() => p.text('#status') === '发送中…', '发送中');
    p.press(); // pressed again while it is on its way
    release();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
    const posts = wx.fake.requests.filter((r) => r.url === FORM);
    assert.equal(posts.length, 1);
    assert.deepEqual(JSON.parse(posts[0].data), { name: '李雷', phone: '13800138000' });
    // Pressed again after the answer, nothing changed: the same result.
    p.press();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到 again');
    assert.equal(wx.fake.requests.filter((r) => r.url === FORM).length, 1);
  } finally {
    p.close();
  }
});

test('every state in Chinese, field errors next to their field', async (tt) => {
  const cases = [
    [{ statusCode: 201 }, 'waitlisted', '已收到：您已在候补名单中。'],
    [{ statusCode: 409, data: { code: 'duplicate-entry' } }, 'duplicate', '您已报名，无需重复提交。'],
    [{ statusCode: 409, data: { code: 'capacity-reached' } }, 'full', '抱歉，名额已满。'],
    [{ statusCode: 410, data: { code: 'form-closed' } }, 'closed', '此表单当前不接受提交。'],
    [{ statusCode: 400, data: { code: 'invalid-request' } }, 'failed', '表单无法提交。'],
  ];
  for (const [a, state, want] of cases) {
    await tt.test(state, async () => {
      const wx = fakeWx({
        answer: (o) => (a.data ? { statusCode: a.statusCode, header: {}, data: JSON.stringify(a.data) } : created(o, 'waitlisted')),
      });
      const p = await launch(wx);
      try {
        p.type('name', '韩梅梅');
        p.type('phone', '13900139000');
        p.press();
        await until(() => p.text('#status') === want, want);
      } finally {
        p.close();
      }
    });
  }
  await tt.test('invalid', async () => {
    const errors = [
      { field: 'phone', code: 'invalid-phone', message: 'is not a valid phone number' },
      { field: 'name', code: 'too-long', message: 'must be at most 100 characters', limit: '100' },
      { field: 'nickname', code: 'unknown-field', message: 'is not a field of this form' },
    ];
    const wx = fakeWx({ answer: () => ({ statusCode: 422, header: {}, data: JSON.stringify({ code: 'validation-failed', errors }) }) });
    const p = await launch(wx);
    try {
      p.type('name', '韩'.repeat(5));
      p.type('phone', '123');
      p.press();
      await until(() => p.text('#error-phone'), 'the phone error');
      assert.equal(p.text('#error-phone'), '请填写有效的电话号码。');
      assert.equal(p.text('#error-name'), '内容太长，最多 100 个字符。');
      assert.equal(p.text('#status'), '需要修改：请修改标出的内容。 此表单没有这一项。');
    } finally {
      p.close();
    }
  });
});

test('offline: 已保存在本机; the app is closed and opened again: sent from the outbox, 已收到', async () => {
  let online = false;
  const formd = fakeFormd(() => online);
  const wx = fakeWx({ answer: formd.answer });
  const first = await launch(wx);
  first.type('name', '王芳');
  first.type('phone', '13700137000');
  first.press();
  await until(() => first.text('#status')?.startsWith('已保存在本机'), '已保存在本机');
  const kept = Object.values(wx.getStorageSync('formd-outbox')).filter((e) => !e.kind);
  assert.equal(kept.length, 1, 'in wx storage');
  first.close(); // the app is killed

  online = true;
  const again = await launch(wx); // same phone, same storage
  try {
    await until(() => formd.stored.has(kept[0].key), 'the entry to arrive, under the key it was given before the restart');
    await until(() => Object.values(wx.getStorageSync('formd-outbox')).filter((e) => !e.kind).length === 0, 'the outbox to empty');
    assert.equal(formd.stored.size, 1);
  } finally {
    again.close();
  }
});

test('on onShow the page resends what waits and says it is saved', async () => {
  let online = false;
  const wx = fakeWx({ answer: fakeFormd(() => online).answer });
  wx.setStorageSync('formd-outbox', { k1: { key: 'k1', form: 'spring-fair-2027', url: FORM, data: { name: '李雷', phone: '13800138000' }, at: 1, tries: 0 } });
  const p = await launch(wx);
  try {
    await until(() => p.text('#status')?.startsWith('已保存在本机'), '已保存在本机');
    const before = wx.fake.requests.length;
    online = true;
    await p.page.instance.onShow();
    await until(() => wx.fake.requests.length > before, 'a resend at onShow');
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
  } finally {
    p.close();
  }
});

test('storage full: 未能保存在本机, and it is still sent', async () => {
  let online = false;
  const wx = fakeWx({ answer: (o) => (online ? created(o) : { fail: 'offline' }), quota: 4096 });
  wx.setStorageSync('photos', 'x'.repeat(4000));
  const p = await launch(wx);
  try {
    p.type('name', '赵雷');
    p.type('phone', '13600136000');
    p.press();
    await until(() => p.text('#status') === '未能保存在本机：请保持此页面打开，直到发送完成。', '未能保存在本机');
    online = true;
    wx.online();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
  } finally {
    p.close();
  }
});

test('an English phone gets English texts', async () => {
  const wx = fakeWx({ answer: (o) => created(o), language: 'en' });
  const p = await launch(wx);
  try {
    assert.equal(p.text('.title'), 'Spring fair registration');
    p.type('name', 'Li Lei');
    p.type('phone', '13800138000');
    p.press();
    await until(() => p.text('#status') === 'Received. Thank you!', 'Received');
  } finally {
    p.close();
  }
});

test('a draft: saved (草稿已保存 only after the 2xx), resumed from its link on another phone, sent once under its key', async () => {
  const formd = draftServer();
  const phone = fakeWx({ answer: formd.answer });
  const first = await launch(phone);
  let link = '';
  try {
    first.type('name', '李雷');
    first.page.querySelector('#save-draft').dispatchEvent('tap');
    await until(() => first.text('#draft-status') === '正在保存草稿…' || first.text('#draft-status')?.startsWith('草稿已保存'), 'the save');
    await until(() => first.text('#draft-status')?.startsWith('草稿已保存'), '草稿已保存');
    assert.equal(formd.byKey.size, 1, 'on the server before 草稿已保存 was shown');
    link = /** @type {string} */ (first.text('#draft-link'));
    assert.match(link, /^https:\/\/forms\.example\.org\/f\/spring-fair-2027\?resume=tok-1$/);
  } finally {
    first.close();
  }

  // Another phone opens the link's token (the page's query).
  const other = fakeWx({ answer: formd.answer });
  const again = await launch(other, { resume: new URL(link).searchParams.get('resume') || '' });
  try {
    await until(() => again.text('#draft-status') === '草稿已打开。', '草稿已打开');
    assert.equal(again.page.instance.data.values.name, '李雷', 'what was typed on the first phone');
    again.type('phone', '13800138000');
    again.page.querySelector('#save-draft').dispatchEvent('tap');
    await until(() => formd.byKey.get([...formd.byKey.keys()][0])?.version === 2, 'the second save');
    const [key] = [...formd.byKey.keys()];
    again.press();
    await until(() => again.text('#status') === '已收到，谢谢！', '已收到');
    assert.deepEqual([...formd.submitted.keys()], [key], "sent once, under the draft's key");
    assert.deepEqual(formd.submitted.get(key), { name: '李雷', phone: '13800138000' });
    assert.equal(formd.byKey.size, 0, 'the draft was consumed');
  } finally {
    again.close();
  }
});

// The form's public definition as formd gives it (GET /v1/forms/{form},
// intake/public.go): a fair with a morning and an afternoon session, the
// afternoon full with a waitlist, and a guardian's phone asked only of a
// minor (show_if, as examples/forms.yaml writes it).
const DEFINITION = 'https://forms.example.org/v1/forms/spring-fair-2027';
const fair = {
  id: 'spring-fair-2027', open: true, durability: 'sync', require_key: false,
  fields: [
    { name: 'name', type: 'text', required: true, label: { en: 'Name', zh: '姓名' } },
    { name: 'phone', type: 'phone', required: true, region: 'CN', label: { en: 'Mobile phone', zh: '手机号' } },
    {
      name: 'session', type: 'select', required: true, label: { en: 'Session', zh: '场次' }, options: [
        { value: 'morning', label: { en: 'Morning', zh: '上午' }, capacity: 40 },
        { value: 'afternoon', label: { en: 'Afternoon', zh: '下午' }, capacity: 40 },
      ],
    },
    {
      name: 'age_group', type: 'select', required: true, label: { en: 'Age group', zh: '年龄段' }, options: [
        { value: 'adult', label: { en: '18 or over', zh: '18 岁及以上' } },
        { value: 'minor', label: { en: 'Under 18', zh: '未满 18 岁' } },
      ],
    },
    {
      name: 'guardian_phone', type: 'phone', required: true, region: 'CN', label: { en: "Guardian's phone", zh: '监护人手机号' },
      show_if: { field: 'age_group', equals: 'minor' },
    },
  ],
  places: {
    field: 'session', waitlist: true, options: [
      { value: 'morning', limit: 40, left: 12, full: false },
      { value: 'afternoon', limit: 40, left: 0, full: true },
    ],
  },
};

/** formd with the fair's definition: its GET answered, each submission stored. */
const fairWx = (language) =>
  fakeWx({
    language,
    answer: (o) => (o.method === 'GET' && o.url === DEFINITION ? { statusCode: 200, header: { 'Content-Type': 'application/json' }, data: JSON.stringify(fair) } : created(o)),
  });

for (const [language, label, morning, afternoon] of [
  ['zh_CN', '场次', '上午', '下午（已满，可候补）'],
  ['en', 'Session', 'Morning', 'Afternoon — full, waitlist'],
]) {
  test(`the full afternoon session is marked full — waitlist (${language})`, async () => {
    const wx = fairWx(language);
    const p = await launch(wx);
    try {
      await until(() => p.text('#session-afternoon'), 'the sessions, from the definition');
      assert.deepEqual(wx.fake.requests.filter((r) => r.url === DEFINITION).map((r) => r.method), ['GET'], 'read once, over wx.request');
      assert.equal(p.text('#field-session .label'), label);
      assert.equal(p.text('#session-morning'), morning);
      assert.equal(p.text('#session-afternoon'), afternoon);
      // A session with a waitlist can still be chosen: the entry waits for its place.
      p.choose('session', 'afternoon');
      await until(() => p.page.instance.data.values.session === 'afternoon', 'the choice');
    } finally {
      p.close();
    }
  });
}

/**
 * Fills the fair's form as a minor: the guardian's phone is hidden until
 * 未满 18 岁 / Under 18 is chosen, then shown under its label and typed.
 */
async function asMinor(p, name, session, guardianLabel) {
  await until(() => p.text('#field-age_group'), 'the definition');
  assert.equal(p.page.querySelector('#guardian_phone'), undefined, 'hidden before any answer');
  p.type('name', name);
  p.type('phone', '13800138000');
  p.choose('session', session);
  p.choose('age_group', 'minor');
  await until(() => p.page.querySelector('#guardian_phone'), 'the guardian field to show');
  assert.equal(p.text('#field-guardian_phone .label'), guardianLabel);
  p.type('guardian_phone', '13900139000');
}

test("a minor's guardian's phone: shown while 未满 18 岁 is chosen, hidden and not sent once it is not", async () => {
  const wx = fairWx('zh_CN');
  const p = await launch(wx);
  try {
    await asMinor(p, '李雷', 'afternoon', '监护人手机号');
    p.choose('age_group', 'adult');
    await until(() => !p.page.querySelector('#guardian_phone'), 'the guardian field to hide');
    p.press();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
    const posts = wx.fake.requests.filter((r) => r.url === FORM);
    assert.equal(posts.length, 1);
    assert.deepEqual(JSON.parse(posts[0].data), { name: '李雷', phone: '13800138000', session: 'afternoon', age_group: 'adult' });
  } finally {
    p.close();
  }
});

test("a minor's guardian's phone is sent while its field is shown", async () => {
  const wx = fairWx('en');
  const p = await launch(wx);
  try {
    await asMinor(p, 'Li Lei', 'morning', "Guardian's phone");
    p.press();
    await until(() => p.text('#status') === 'Received. Thank you!', 'Received');
    const [post] = wx.fake.requests.filter((r) => r.url === FORM);
    assert.deepEqual(JSON.parse(post.data), { name: 'Li Lei', phone: '13800138000', session: 'morning', age_group: 'minor', guardian_phone: '13900139000' });
  } finally {
    p.close();
  }
});
