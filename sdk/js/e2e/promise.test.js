// End-to-end checks of what the SDK relies on from the server's promise at
// its edges:
//   - spam is answered 201 with status "received";
//   - a new key whose content equals the participant's live entry gets
//     200, Idempotent-Replayed, and that entry's status document;
//   - a retry of a journaled key gets its first outcome even after the
//     form has closed;
//   - unknown_fields: reject answers 422 unknown-field;
//   - POST /v1/forms/{form}/arrivals answers 202.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Formd, withBrowser, waitFor, startFormd } from '../../../e2e/harness/harness.js';

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;
let seq = 0;
const person = () => ({ name: `Zhao Lei ${++seq}`, phone: `1370013${String(8000 + seq)}` });

/** @param {import('playwright-core').BrowserContext} ctx */
async function open(ctx, path = '/f/e2e') {
  ctx.setDefaultTimeout(15000);
  const page = ctx.pages()[0] || (await ctx.newPage());
  /** @type {import('playwright-core').Request[]} */
  const posts = [];
  page.on('request', (r) => r.method() === 'POST' && r.url().includes('/submissions') && posts.push(r));
  await page.goto(server.base + path);
  await page.waitForSelector('form[data-formd][data-state]');
  return { page, posts };
}

/** @param {import('playwright-core').Page} page @param {{name: string, phone: string}} p */
async function fill(page, p) {
  await page.getByRole('textbox', { name: 'Name', exact: true }).fill(p.name);
  await page.getByRole('textbox', { name: 'Mobile phone', exact: true }).fill(p.phone);
}

/** @param {import('playwright-core').Page} page */
const press = (page) => page.getByRole('button', { name: 'Submit' }).click();
/** @param {import('playwright-core').Page} page @param {string} state */
const reached = (page, state) => page.waitForSelector(`form[data-state="${state}"]`);
/** @param {import('playwright-core').Page} page */
const statusText = async (page) => (await page.locator('[data-formd-status]').textContent()) || '';

describe('what the SDK relies on from the server', { concurrency: 1, timeout: 60000 }, () => {
  before(async () => {
    ({ srv: server, stop } = await startFormd());
  });
  after(async () => {
    await stop?.();
  });

  test('spam is answered 201 with status received, and the page says received', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await open(ctx);
      await fill(page, person());
      await page.locator('input[name=website]').evaluate((el) => ((/** @type {HTMLInputElement} */ (el)).value = 'https://spam.example'));
      await press(page);
      await reached(page, 'received');
      const r = await posts[0].response();
      assert.equal(r?.status(), 201);
      assert.equal((await r?.json()).status, 'received');
      assert.equal(await statusText(page), 'Received. Thank you!');
    });
  });

  test('the same person and values from a new page: the first entry, received, never "already registered"', async () => {
    const p = person();
    let first = '';
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await open(ctx);
      await fill(page, p);
      await press(page);
      await reached(page, 'received');
      first = posts[0].headers()['idempotency-key'];
    });
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await open(ctx);
      await fill(page, p);
      await press(page);
      await reached(page, 'received');
      const r = await posts[0].response();
      assert.notEqual(posts[0].headers()['idempotency-key'], first, 'a new key');
      assert.equal(r?.status(), 200);
      assert.equal(r?.headers()['idempotent-replayed'], 'true');
      // The first entry's outcome, under this page's own key: never the
      // first entry's key (DESIGN §4, issue 17).
      const doc = await r?.json();
      assert.equal(doc.key, posts[0].headers()['idempotency-key'], 'answered under its own key');
      assert.equal(doc.status, 'stored', "the first entry's outcome");
      assert.equal(await statusText(page), 'Received. Thank you!');
    });
    const live = (await server.entriesFor(p.phone)).filter((e) => e.status === 'stored');
    assert.equal(live.length, 1);
  });

  test('a retry after the form closed gets the first outcome (200 replay), no status lookup needed', async () => {
    await server.applyForms('id: closing2\ntitle: Closes\nfields:\n  - {name: name, type: text, required: true, label: Name}\n  - {name: phone, type: phone, required: true, region: CN, label: Mobile phone}\nunique: [[phone]]\n');
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await open(ctx, '/f/closing2');
      const p = person();
      await fill(page, p);
      let first = '';
      /** @type {(v?: unknown) => void} */
      let closed = () => {};
      const formClosed = new Promise((r) => (closed = r));
      await page.route('**/v1/forms/closing2/submissions', async (route) => {
        if (!first) {
          first = route.request().headers()['idempotency-key'];
          await route.fetch();
          return route.abort('connectionreset');
        }
        await formClosed;
        return route.continue();
      });
      await press(page);
      await reached(page, 'saved');
      await server.applyForms('id: closing2\ntitle: Closes\nfields:\n  - {name: name, type: text, required: true, label: Name}\n  - {name: phone, type: phone, required: true, region: CN, label: Mobile phone}\nunique: [[phone]]\ncloses_at: 2020-01-01T00:00:00Z\n');
      closed();
      await reached(page, 'received');
      const r = await posts.at(-1)?.response();
      assert.equal(r?.status(), 200);
      assert.equal(r?.headers()['idempotent-replayed'], 'true');
    });
  });

  test('unknown_fields: reject: the field is named in Chinese', async () => {
    await server.applyForms('id: strict\ntitle: Strict\nunknown_fields: reject\nfields:\n  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}\n');
    await withBrowser({ locale: 'zh-CN' }, async (ctx) => {
      ctx.setDefaultTimeout(15000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/f/strict');
      await page.waitForSelector('form[data-formd][data-state]');
      await page.locator('form').evaluate((f) => f.insertAdjacentHTML('beforeend', '<input type="hidden" name="nickname" value="x">'));
      await page.getByRole('textbox', { name: '姓名', exact: true }).fill('周杰');
      await page.getByRole('button', { name: '提交' }).click();
      await reached(page, 'invalid');
      assert.match(await statusText(page), /此表单没有这一项。/);
    });
  });

  test('the real arrivals endpoint takes the beacons (202) and they leave the outbox', async () => {
    await withBrowser({}, async (ctx) => {
      const { page } = await open(ctx);
      /** @type {number[]} */
      const answers = [];
      page.on('response', (r) => r.url().endsWith('/v1/forms/e2e/arrivals') && answers.push(r.status()));
      await fill(page, person());
      await press(page);
      await reached(page, 'received');
      await waitFor(() => answers.includes(202), { what: 'a 202 from /arrivals' });
    });
  });
});
