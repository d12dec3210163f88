// The uni-app example (examples/uniapp): its single-file page compiled
// with Vue's own compiler and mounted with Vue in jsdom, on the fake uni
// that follows @dcloudio/types, as uni-app runs it on a phone (uni's
// components view/text/label are left as elements; its input event
// carries detail.value, its page hooks are onLoad/onShow/onUnload).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { JSDOM } from 'jsdom';
import { fakeUni } from './fake-uni.js';
import { until, created } from './fakes.js';

const here = dirname(fileURLToPath(import.meta.url));
const example = resolve(here, '../../../examples/uniapp');
const FORM = 'https://forms.example.org/v1/forms/spring-fair-2027/submissions';

let dir = '';
/** @type {any} */
let Vue;
/** @type {string} */
let template;
let n = 0;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'formd-uni-'));
  const dom = new JSDOM('<!doctype html><html><body></body></html>');
  for (const k of ['window', 'document', 'Node', 'Element', 'HTMLElement', 'SVGElement', 'Event', 'CustomEvent', 'MathMLElement']) {
    globalThis[k] = k === 'window' ? dom.window : dom.window[k];
  }
  Vue = await import('vue');
  const { parse } = await import('vue/compiler-sfc');
  const { descriptor, errors } = parse(readFileSync(join(example, 'pages/register/register.vue'), 'utf8'));
  assert.deepEqual(errors, []);
  template = descriptor.template.content;
  globalThis.__script = descriptor.script.content;
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** The page's <script>, bundled as uni-app's build would, fresh each time (a new app run). */
async function pageComponent() {
  const out = join(dir, `register-${++n}.mjs`);
  await build({
    stdin: { contents: globalThis.__script, resolveDir: join(example, 'pages/register'), sourcefile: 'register.vue' },
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    alias: { '@formd/sdk/messages.js': resolve(here, '../messages.js'), '@formd/sdk': resolve(here, '../formd.js') },
    logLevel: 'warning',
  });
  return (await import(pathToFileURL(out).href)).default;
}

/** Opens the page on a fake uni: mount, onLoad, onShow. */
async function open(uni) {
  globalThis.uni = uni;
  const comp = await pageComponent();
  const app = Vue.createApp({ ...comp, template });
  app.config.compilerOptions.isCustomElement = (t) => ['view', 'text', 'label'].includes(t);
  app.config.warnHandler = (msg) => {
    throw new Error(msg);
  };
  const root = document.createElement('div');
  document.body.append(root);
  const vm = app.mount(root);
  vm.$options.onLoad.call(vm);
  await vm.$options.onShow.call(vm);
  const text = (sel) => root.querySelector(sel)?.textContent.trim() ?? null;
  const type = (id, value) => root.querySelector('#' + id).dispatchEvent(new CustomEvent('input', { detail: { value } }));
  const press = () => root.querySelector('#submit').dispatchEvent(new window.Event('click'));
  return { vm, root, text, type, press, unmount: () => (vm.$options.onUnload.call(vm), app.unmount()) };
}


test('uni-app page: 发送中, then 已收到, one request, the same press again is the same submission', async () => {
  let release;
  const gate = new Promise((r) => (release = r));
  const uni = fakeUni({
    answer: async (o) => {
      if (o.url.endsWith('/arrivals')) return { statusCode: 202 };
      await gate;
      return created(o);
    },
  });
  const p = await open(uni);
  try {
    assert.equal(p.text('.title'), '春季集市报名');
    p.type('name', '李雷');
    p.type('phone', '13800138000');
    p.press();
    await until(() => p.text('#status') === '发送中…', '发送中');
    release();
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到');
    p.press();
    await new Promise((r) => setTimeout(r, 0));
    await until(() => p.text('#status') === '已收到，谢谢！', '已收到 again');
    assert.equal(uni.fake.requests.filter((r) => r.url === FORM).length, 1);
    assert.deepEqual(JSON.parse(uni.fake.requests[0].data), { name: '李雷', phone: '13800138000' });
  } finally {
    p.unmount();
  }
});

test('uni-app page: waitlisted, needs a fix with the field errors, offline saved then sent', async () => {
  const errors = [{ field: 'phone', code: 'invalid-phone', message: 'is not a valid phone number' }];
  let k = 0;
  let online = true;
  const uni = fakeUni({
    answer: (o) => {
      if (!online) return { fail: 'offline' };
      if (o.url.endsWith('/arrivals')) return { statusCode: 202 };
      if (o.method === 'GET') return { statusCode: 404, header: {}, data: '{"code":"submission-not-found"}' };
      k++;
      if (k === 1) return { statusCode: 422, header: {}, data: JSON.stringify({ code: 'validation-failed', errors }) };
      return created(o, 'waitlisted');
    },
  });
  const p = await open(uni);
  try {
    p.type('name', '韩梅梅');
    p.type('phone', '123');
    p.press();
    await until(() => p.text('#error-phone') === '请填写有效的电话号码。', 'the phone error');
    assert.equal(p.text('#status'), '需要修改：请修改标出的内容。');
    online = false;
    p.type('phone', '13900139000');
    p.press();
    await until(() => p.text('#status')?.startsWith('已保存在本机'), '已保存在本机');
    assert.equal(p.text('#error-phone'), null, 'the fixed field has no error');
    online = true;
    uni.online();
    await until(() => p.text('#status') === '已收到：您已在候补名单中。', '已在候补名单');
  } finally {
    p.unmount();
  }
});

test('uni-app page on an English phone', async () => {
  const uni = fakeUni({ answer: (o) => created(o), language: 'en-US' });
  const p = await open(uni);
  try {
    assert.equal(p.text('.title'), 'Spring fair registration');
    p.type('name', 'Han Meimei');
    p.type('phone', '13900139000');
    p.press();
    await until(() => p.text('#status') === 'Received. Thank you!', 'Received');
  } finally {
    p.unmount();
  }
});
