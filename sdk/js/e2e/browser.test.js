// End-to-end tests: the hosted form page and the SDK in real headless
// Chromium (Debian's, driven by playwright-core) against a real `formd
// serve`. Each test has its own browser profile; "stored once" is checked
// through the server's admin export, never through the page alone.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { Formd, withBrowser, ensureOutputDir, tempDir, waitFor, startFormd } from '../../../e2e/harness/harness.js';

/** The "closing" form of forms.yaml, with closes_at set. */
const closingForm = (closesAt) => `id: closing
title: Closes during the test
fields:
  - {name: name,  type: text,  required: true, label: Name}
  - {name: phone, type: phone, required: true, region: CN, label: Mobile phone}
unique: [[phone]]
closes_at: ${closesAt}
`;

/** @type {{bin: string, cleanup: () => void}} */
let binary;
/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;

let seq = 0;
/** A new person: a phone number no other test uses. */
function person() {
  seq++;
  return { name: `Wang Fang ${seq}`, phone: `1380013${String(8000 + seq)}`, email: `fang${seq}@example.org`, tickets: '2' };
}

/** Records every formd:state event of the page in window.__events. */
function recordEvents() {
  // @ts-ignore: runs in the page
  window.__events = [];
  document.addEventListener('formd:state', (e) => window.__events.push(/** @type {CustomEvent} */ (e).detail));
}

/** The contexts whose pages record their events already. */
const recording = new WeakSet();

/**
 * Opens the hosted form and waits until the SDK has enhanced it. posts
 * collects the submission POSTs the page makes.
 * @param {import('playwright-core').BrowserContext} ctx
 */
async function openForm(ctx, base = server.base, path = '/f/e2e') {
  ctx.setDefaultTimeout(15000);
  if (!recording.has(ctx)) {
    recording.add(ctx);
    await ctx.addInitScript(recordEvents);
  }
  const page = ctx.pages()[0] || (await ctx.newPage());
  /** @type {import('playwright-core').Request[]} */
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST' && r.url().includes('/submissions')) posts.push(r);
  });
  await page.goto(base + path);
  await page.waitForSelector('form[data-formd][data-state]');
  return { page, posts };
}

/** @param {import('playwright-core').Page} page */
async function fill(page, p) {
  // By accessible name, as assistive technology finds them (the "*" is
  // aria-hidden, so the name is just the label).
  await field(page, 'Name').fill(p.name);
  await field(page, 'Mobile phone').fill(p.phone);
  await field(page, 'E-mail').fill(p.email);
  await page.getByRole('spinbutton', { name: 'Tickets', exact: true }).fill(p.tickets);
}

/** @param {import('playwright-core').Page} page @param {string} name */
const field = (page, name) => page.getByRole('textbox', { name, exact: true });

/** @param {import('playwright-core').Page} page */
const submitButton = (page) => page.getByRole('button', { name: 'Submit' });

/** @param {import('playwright-core').Page} page */
const reached = (page, state, timeout = 15000) => page.waitForSelector(`form[data-state="${state}"]`, { timeout });

/** @param {import('playwright-core').Page} page */
const statusText = async (page) => (await page.locator('[data-formd-status]').textContent()) || '';

/** @param {import('playwright-core').Page} page */
const states = (page) => page.evaluate(() => /** @type {any} */ (window).__events.map((/** @type {any} */ e) => e.state));

/**
 * The submissions in the SDK's outbox as it is in the page's IndexedDB
 * (with the arrival beacons too if all), read without creating the
 * database (which would stop the SDK from creating its store).
 * @param {import('playwright-core').Page} page
 */
const outbox = async (page, all = false) => (await rawOutbox(page)).filter((/** @type {any} */ e) => all || !e.kind);

/** @param {import('playwright-core').Page} page */
const rawOutbox = (page) =>
  page.evaluate(async () => {
    if (!(await indexedDB.databases()).some((d) => d.name === 'formd')) return [];
    return new Promise((res, rej) => {
      const q = indexedDB.open('formd');
      q.onerror = () => rej(q.error);
      q.onsuccess = () => {
        const db = q.result;
        if (!db.objectStoreNames.contains('outbox')) return db.close(), res([]);
        const g = db.transaction('outbox').objectStore('outbox').getAll();
        g.onsuccess = () => (db.close(), res(g.result));
        g.onerror = () => rej(g.error);
      };
    });
  });

/**
 * Asserts the server holds exactly one live entry (stored, not spam) for p,
 * under key if given. Unless attempts is set, it must also be the only
 * record for p at all: a second submission with a new key would show as a
 * "duplicate" record even though it did not become a second live entry.
 */
async function storedOnce(srv, p, key, { attempts = false } = {}) {
  const all = await srv.entriesFor(p.phone);
  const live = all.filter((e) => e.status === 'stored' || e.status === 'waitlisted');
  assert.equal(live.length, 1, `live entries for ${p.phone}: ${JSON.stringify(all)}`);
  if (!attempts) assert.equal(all.length, 1, `records for ${p.phone}: ${JSON.stringify(all)}`);
  assert.equal(new Set(all.map((e) => e.key)).size, all.length, 'a key recorded twice');
  assert.equal(live[0].status, 'stored');
  assert.equal(live[0].data.name, p.name);
  if (key) assert.equal(live[0].key, key);
  return live[0];
}

// The timeout guards against a hang, it is not a speed check: twenty
// browser tests on a shared 2-core machine can take minutes.
describe('hosted form and SDK in Chromium', { concurrency: 1, timeout: 600000 }, () => {
  before(async () => {
    ({ bin: binary, srv: server, stop } = await startFormd());
  });
  after(async () => {
    await stop?.();
  });

  test('a normal submit is received and stored once', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      await submitButton(page).click();
      await reached(page, 'received');
      assert.equal(await statusText(page), 'Received. Thank you!');
      assert.equal(posts.length, 1);
      const key = posts[0].headers()['idempotency-key'];
      assert.match(key, /^[0-9a-f-]{36}$/);
      assert.deepEqual(await states(page), ['idle', 'sending', 'received']);
      assert.deepEqual(await outbox(page), [], 'the outbox is empty after the answer');
      await storedOnce(server, p, key);
      assert.equal((await server.status(key)).status, 'stored');

      // The values stay; a press with nothing changed is the same
      // submission: its first result again, no new key, no request.
      assert.equal(await field(page, 'Name').inputValue(), p.name);
      await submitButton(page).click();
      await page.waitForFunction(() => /** @type {any} */ (window).__events.length === 4);
      assert.equal(await statusText(page), 'Received. Thank you!');
      assert.deepEqual(await states(page), ['idle', 'sending', 'received', 'received']);
      assert.equal(posts.length, 1);
      await storedOnce(server, p, key);
    });
  });

  test('presses 30 ms apart on a fast network: one submission, ending as received', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      for (let i = 0; i < 4; i++) {
        await submitButton(page).click();
        // The gap between presses is the scenario, not a wait for a result.
        await page.waitForTimeout(30);
      }
      await reached(page, 'received');
      await page.waitForFunction(() => document.querySelector('form[data-formd]')?.getAttribute('data-state') === 'received');
      assert.equal(posts.length, 1, 'one POST, one key');
      assert.equal(await statusText(page), 'Received. Thank you!');
      const all = await states(page);
      assert.ok(!all.includes('duplicate'), `states: ${all}`);
      assert.equal(all.at(-1), 'received');
      await storedOnce(server, p, posts[0].headers()['idempotency-key']);
    });
  });

  test('storage refused (private mode, quota): "not saved on this device", and it is still sent', async () => {
    await withBrowser({}, async (ctx) => {
      // Neither IndexedDB nor localStorage will keep anything on this page.
      await ctx.addInitScript(() => {
        Object.defineProperty(window, 'indexedDB', { value: { open: () => { throw new DOMException('denied', 'SecurityError'); } } });
        Storage.prototype.setItem = () => {
          throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
        };
      });
      const { page } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      await ctx.setOffline(true);
      await submitButton(page).click();
      await reached(page, 'unsaved');
      assert.equal(await statusText(page), 'Not saved on this device: keep this page open until it is sent.');
      assert.ok(!(await states(page)).includes('saved'), 'never said saved');
      await ctx.setOffline(false);
      await reached(page, 'received', 20000);
      await storedOnce(server, p);
    });
  });

  test('a retry met by form-closed after its first send was stored: looked up, shown as received', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx, server.base, '/f/closing');
      const p = person();
      await field(page, 'Name').fill(p.name);
      await field(page, 'Mobile phone').fill(p.phone);
      /** @type {(v?: unknown) => void} */
      let closed = () => {};
      const formClosed = new Promise((r) => (closed = r));
      let first = '';
      const gets = [];
      page.on('request', (r) => {
        if (r.method() === 'GET' && r.url().includes('/submissions/')) gets.push(r.url());
      });
      // The first POST is stored, but its answer is lost; the retry waits
      // until the form has closed.
      await page.route('**/v1/forms/closing/submissions', async (route) => {
        if (!first) {
          first = route.request().headers()['idempotency-key'];
          await route.fetch();
          return route.abort('connectionreset');
        }
        await formClosed;
        return route.continue();
      });
      await submitButton(page).click();
      await reached(page, 'saved');
      assert.equal((await server.status(first, 'closing')).status, 'stored');
      await server.applyForms(closingForm('2020-01-01T00:00:00Z'));
      closed();
      await reached(page, 'received', 20000);
      assert.equal(await statusText(page), 'Received. Thank you!');
      const answers = await Promise.all(posts.slice(1).map((r) => r.response()));
      if (answers.some((a) => a && a.status() === 410)) assert.ok(gets.length > 0, 'the 410 was checked by status before being believed');
      const all = await server.entriesFor(p.phone, 'closing');
      assert.deepEqual(all.map((e) => [e.key, e.status]), [[first, 'stored']]);
    });
  });

  test('Chinese field errors name the bound the server gives', async () => {
    await withBrowser({ locale: 'zh-CN' }, async (ctx) => {
      const { page } = await openForm(ctx);
      const p = person();
      await page.getByRole('textbox', { name: '姓名', exact: true }).fill(p.name);
      await page.getByRole('textbox', { name: '手机号', exact: true }).fill(p.phone);
      // Past the page's own max (a page can be edited): the server's check.
      await page.locator('#f-tickets').evaluate((el) => el.removeAttribute('max'));
      await page.getByRole('spinbutton', { name: '票数', exact: true }).fill('9');
      await page.getByRole('button', { name: '提交' }).click();
      await reached(page, 'invalid');
      assert.equal(await page.locator('#e-tickets').textContent(), '数值太大，最大为 4。');
      assert.equal(await statusText(page), '需要修改：请修改标出的内容。');
    });
  });

  test('arrival beacons: started and answered for the key, after the submission (stub endpoint)', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      /** @type {any[]} */
      const batches = [];
      // Intercepted, so that the test sees each batch as the SDK sends it
      // (the server's own handling is tested in Go and in the console suite).
      await page.route('**/v1/forms/e2e/arrivals', async (route) => {
        batches.push({ body: route.request().postDataJSON(), at: Date.now() });
        await route.fulfill({ status: 202 });
      });
      const p = person();
      await fill(page, p);
      await submitButton(page).click();
      await reached(page, 'received');
      const key = posts[0].headers()['idempotency-key'];
      const events = await waitFor(() => {
        const ev = batches.flatMap((b) => b.body.events);
        return ev.some((e) => e.type === 'answered') && ev;
      }, { what: 'the answered beacon' });
      assert.deepEqual(events.map((e) => [e.key, e.type, e.state]), [[key, 'started', undefined], [key, 'answered', 'received']]);
      assert.ok(events[1].at >= events[0].at);
      await waitFor(async () => (await outbox(page, true)).length === 0, { what: 'beacons to leave the outbox once accepted' });
      assert.deepEqual(await states(page), ['idle', 'sending', 'received'], 'beacons show nothing');
    });
  });

  test('a double click makes one submission', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      await submitButton(page).dblclick();
      await reached(page, 'received');
      assert.equal(posts.length, 1, 'the second click joined the first instead of sending again');
      const all = await states(page);
      assert.ok(!all.includes('duplicate'), `states: ${all}`);
      await storedOnce(server, p);
    });
  });

  test('offline: saved on this device, then received once back online', async () => {
    await withBrowser({}, async (ctx) => {
      const { page } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      await ctx.setOffline(true);
      await submitButton(page).click();
      await reached(page, 'saved');
      assert.match(await statusText(page), /^Saved on this device\./);
      const kept = await outbox(page);
      assert.equal(kept.length, 1, 'the submission is in IndexedDB');
      assert.equal(kept[0].data.phone, p.phone);
      assert.deepEqual(await server.entriesFor(p.phone), [], 'nothing reached the server');

      await ctx.setOffline(false);
      await reached(page, 'received', 20000);
      await storedOnce(server, p, kept[0].key);
      assert.deepEqual(await outbox(page), []);
      const s = await states(page);
      assert.deepEqual([s[0], s[1], s[2], s.at(-1)], ['idle', 'sending', 'saved', 'received']);
    });
  });

  test('formd killed while the page is sending, restarted: received once', async () => {
    const own = await Formd.create(binary.bin);
    try {
      await withBrowser({}, async (ctx) => {
        const { page } = await openForm(ctx, own.base);
        const p = person();
        await fill(page, p);
        /** @type {{status: number} | undefined} */
        let first;
        const replayed = [];
        page.on('response', (r) => {
          if (r.request().method() === 'POST' && r.url().includes('/submissions')) replayed.push(r.headers()['idempotent-replayed'] || '');
        });
        // The first POST reaches formd, which journals and stores it; then
        // formd dies with SIGKILL before the page has its answer.
        await page.route('**/v1/forms/e2e/submissions', async (route) => {
          if (first) return route.continue();
          const res = await route.fetch();
          first = { status: res.status() };
          await own.kill();
          await route.abort('connectionreset');
        });
        await submitButton(page).click();
        await reached(page, 'saved');
        assert.equal(first && first.status, 201, 'formd had stored it before it died');
        assert.equal((await outbox(page)).length, 1, 'still in the outbox while formd is down');

        await own.start();
        await reached(page, 'received', 30000);
        const got = await storedOnce(own, p);
        assert.equal((await outbox(page))[0], undefined);
        assert.equal(replayed.at(-1), 'true', 'the retry was answered as a replay of the first');
        assert.equal((await own.status(got.key)).status, 'stored');
      });
    } finally {
      await own.close();
    }
  });

  test('reloaded with an unsent entry in the outbox: sent after the reload, once', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      // The network refuses every send until the reload.
      await page.route('**/v1/forms/e2e/submissions', (route) => route.abort('internetdisconnected'));
      await submitButton(page).click();
      await reached(page, 'saved');
      const [kept] = await outbox(page);
      assert.ok(kept, 'in the outbox');
      assert.equal(await server.status(kept.key), null, 'the server has not seen it');
      await page.unroute('**/v1/forms/e2e/submissions');

      const before = posts.length;
      await page.reload();
      await reached(page, 'received');
      const after = posts.slice(before);
      assert.equal(after.length, 1, 'sent once after the reload');
      assert.equal(after[0].headers()['idempotency-key'], kept.key, 'with the key it was given before the reload');
      await storedOnce(server, p, kept.key);
      assert.deepEqual(await outbox(page), []);
    });
  });

  test('reloaded after the server got it but the answer was lost: looked up, not sent again', async () => {
    await withBrowser({}, async (ctx) => {
      const { page } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      let key = '';
      // The first POST reaches formd, which stores it, but the answer is
      // lost on the way back; later tries find no network.
      await page.route('**/v1/forms/e2e/submissions', async (route) => {
        if (key) return route.abort('internetdisconnected');
        key = route.request().headers()['idempotency-key'];
        await route.fetch();
        await route.abort('connectionreset');
      });
      await submitButton(page).click();
      await reached(page, 'saved');
      assert.equal((await server.status(key)).status, 'stored', 'formd has it');
      assert.equal((await outbox(page)).length, 1, 'the page does not know: still in its outbox');
      // The page is closed with its network still failing and opened
      // again: a retry timer of the first page could otherwise fire
      // between lifting the fault and reloading (on a loaded machine it
      // did), and be counted as a POST of the new page.
      await page.close();
      const again = await openForm(ctx);
      await reached(again.page, 'received');
      assert.equal(again.posts.length, 0, 'the status lookup found it: no second POST');
      await storedOnce(server, p, key);
      assert.deepEqual(await outbox(again.page), []);
    });
  });

  test('the outbox survives closing the browser: sent when the page is opened again', async () => {
    // formd is down from before the press until after the browser is
    // closed, so nothing can reach it early (even during the browser's
    // shutdown); the entry can only come from the profile on disk.
    const own = await Formd.create(binary.bin);
    const profile = tempDir('formd-chromium-');
    try {
      const p = person();
      let key = '';
      await withBrowser(
        {},
        async (ctx) => {
          const { page } = await openForm(ctx, own.base);
          await fill(page, p);
          await own.kill();
          await submitButton(page).click();
          await reached(page, 'saved');
          key = (await outbox(page))[0].key;
        },
        { dir: profile.dir },
      );
      await own.start();
      await withBrowser(
        {},
        async (ctx) => {
          const { page } = await openForm(ctx, own.base);
          await reached(page, 'received');
          await storedOnce(own, p, key);
          assert.deepEqual(await outbox(page), []);
        },
        { dir: profile.dir },
      );
    } finally {
      profile.cleanup();
      await own.close();
    }
  });

  test('the same person again: already registered, nothing personal echoed', async () => {
    await withBrowser({}, async (ctx) => {
      const { page } = await openForm(ctx);
      const p = person();
      await fill(page, p);
      await submitButton(page).click();
      await reached(page, 'received');

      await page.goto(server.base + '/f/e2e');
      await page.waitForSelector('form[data-state=idle]');
      await fill(page, { ...p, name: p.name + ' again', email: 'other@example.org' });
      const answer = page.waitForResponse((r) => r.request().method() === 'POST');
      await submitButton(page).click();
      await reached(page, 'duplicate');
      const res = await answer;
      assert.equal(res.status(), 409);
      const body = await res.text();
      const shown = await statusText(page);
      assert.equal(shown, 'You are already registered.');
      const events = JSON.stringify(await page.evaluate(() => /** @type {any} */ (window).__events));
      for (const v of [p.name, p.phone, '+86' + p.phone, p.email, 'other@example.org']) {
        assert.ok(!body.includes(v), `the 409 body echoes ${v}: ${body}`);
        assert.ok(!shown.includes(v), `the page says ${v}`);
        assert.ok(!events.includes(v), `the events carry ${v}`);
      }
      const records = await server.entriesFor(p.phone);
      assert.deepEqual(records.map((e) => e.status).sort(), ['duplicate', 'stored'], 'the second attempt is recorded as a duplicate, not stored');
      await storedOnce(server, p, undefined, { attempts: true });
      assert.deepEqual(await outbox(page), []);
    });
  });

  test('validation errors are shown next to their fields', async () => {
    await withBrowser({}, async (ctx) => {
      const { page, posts } = await openForm(ctx);
      const p = person();
      // The browser's own check: a required field left empty, no request.
      await field(page, 'Mobile phone').fill(p.phone);
      await submitButton(page).click();
      await reached(page, 'invalid');
      assert.equal(posts.length, 0);
      const nameErr = page.locator('#e-name');
      assert.ok(await nameErr.isVisible());
      assert.ok(((await nameErr.textContent()) || '').length > 0);
      assert.equal(await page.locator('#f-name').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.id), 'f-name');

      // The server's check: a number that is not a phone number.
      await fill(page, { ...p, phone: '12345' });
      await submitButton(page).click();
      await page.waitForSelector('#e-phone:not([hidden])');
      await reached(page, 'invalid');
      assert.equal(posts.length, 1);
      assert.equal((await posts[0].response())?.status(), 422);
      assert.equal(await page.locator('#e-phone').textContent(), 'Mobile phone is not a valid phone number');
      assert.ok(await page.locator('#e-name').isHidden(), 'the fixed field has no error any more');
      assert.equal(await page.locator('#f-name').getAttribute('aria-invalid'), null);
      assert.equal(await page.locator('#f-phone').getAttribute('aria-invalid'), 'true');
      assert.match((await page.locator('#f-phone').getAttribute('aria-describedby')) || '', /\be-phone\b/);
      // "Next to": the error sits in the same field block, right under the input.
      const sameField = await page.evaluate(() => {
        const input = document.getElementById('f-phone');
        const err = document.getElementById('e-phone');
        return !!input && !!err && input.closest('.field') === err.closest('.field') && input.nextElementSibling === err;
      });
      assert.ok(sameField);
      assert.equal(await page.evaluate(() => document.activeElement && document.activeElement.id), 'f-phone');
      assert.equal(await statusText(page), 'Please correct the marked fields.');
      assert.deepEqual(await outbox(page), [], 'a 422 is definitive: the entry left the outbox');
      assert.deepEqual(await server.entriesFor(p.phone), []);

      // Fixed, it goes through.
      await field(page, 'Mobile phone').fill(p.phone);
      await submitButton(page).click();
      await reached(page, 'received');
      await storedOnce(server, p);
    });
  });

  test('without JavaScript the form still posts, and a double click lands once', async () => {
    await withBrowser({ javaScriptEnabled: false }, async (ctx) => {
      ctx.setDefaultTimeout(15000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/f/e2e');
      const p = person();
      await fill(page, p);
      // The second click may abort the first post's navigation, so wait for
      // where the page ends up rather than for one navigation.
      await submitButton(page).dblclick();
      await waitFor(() => /\/f\/e2e\/done\?key=/.test(page.url()), { what: 'the result page' });
      await page.waitForSelector('[data-status=stored]');
      assert.equal(await page.locator('[role=status]').textContent(), 'Received. Thank you!');
      const key = new URL(page.url()).searchParams.get('key');
      await storedOnce(server, p, key || '');
    });
  });

  // Issue 21 item 7: the Chinese page, in a browser whose own language is
  // English, says every check in Chinese: the browser's messages
  // ("Please fill out this field.") never appear, with or without JavaScript.
  test('the Chinese page checks in Chinese in an English browser, with JavaScript', async () => {
    await withBrowser({ locale: 'en-US' }, async (ctx) => {
      const { page, posts } = await openForm(ctx, server.base, '/f/e2e?lang=zh');
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
      assert.equal(await page.evaluate(() => navigator.language), 'en-US');
      assert.equal(await page.locator('form[data-formd]').evaluate((f) => /** @type {HTMLFormElement} */ (f).noValidate), true);
      await page.getByRole('textbox', { name: '电子邮箱', exact: true }).fill('not-an-address');
      await page.getByRole('spinbutton', { name: '票数', exact: true }).fill('9');
      await page.getByRole('button', { name: '提交' }).click();
      await reached(page, 'invalid');
      const err = (name) => page.locator(`[data-formd-error="${name}"]`).textContent();
      assert.equal(await err('name'), '此项必填。');
      assert.equal(await err('phone'), '此项必填。');
      assert.equal(await err('email'), '请填写有效的电子邮箱。');
      assert.equal(await err('tickets'), '数值太大，最大为 4。');
      const shown = await page.locator('main').innerText();
      assert.doesNotMatch(shown, /Please|field|valid|must/i, 'no English on the Chinese page');
      assert.equal(posts.length, 0, 'nothing is sent before the fields are right');
    });
  });

  test('the Chinese page checks in Chinese in an English browser, without JavaScript', async () => {
    await withBrowser({ javaScriptEnabled: false, locale: 'en-US' }, async (ctx) => {
      ctx.setDefaultTimeout(15000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/f/e2e?lang=zh');
      // novalidate: the browser does not stop the post with its own
      // English bubble; formd checks and answers in the page's language.
      assert.equal(await page.locator('form[data-formd]').getAttribute('novalidate'), '');
      await page.getByRole('textbox', { name: '电子邮箱', exact: true }).fill('not-an-address');
      await page.getByRole('button', { name: '提交' }).click();
      await page.waitForSelector('.summary');
      assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
      assert.equal(await page.locator('.summary').textContent(), '需要修改：请修改标出的内容。');
      const err = (name) => page.locator(`[data-formd-error="${name}"]`).textContent();
      assert.equal(await err('name'), '姓名: 此项必填。');
      assert.equal(await err('email'), '电子邮箱: 请填写有效的电子邮箱。');
      // What was typed is kept.
      assert.equal(await page.getByRole('textbox', { name: '电子邮箱', exact: true }).inputValue(), 'not-an-address');
      assert.doesNotMatch(await page.locator('main').innerText(), /Please|field|valid|must/i);
    });
  });

  test('a plain form on another site, enhanced by the SDK loaded from formd', async () => {
    // A static page on another origin: no formd markup beyond data-formd,
    // so the SDK adds the status line and the error messages itself.
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Club</title>
<script type="module" src="${server.base}/sdk/formd.js"></script></head><body>
<form data-formd="embed" method="post" action="${server.base}/v1/forms/embed/submissions">
<label for="n">Your name</label><input id="n" name="name" required>
<label for="p">Phone</label><input id="p" name="phone" type="tel" required>
<input id="c" type="checkbox" name="consent" value="true" required><label for="c">I agree</label>
<button>Register</button></form></body></html>`;
    const site = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page);
    });
    await new Promise((r) => site.listen(0, '127.0.0.1', () => r(undefined)));
    const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (site.address()).port}`;
    try {
      await withBrowser({}, async (ctx) => {
        const { page: tab, posts } = await openForm(ctx, origin, '/');
        const p = person();
        await tab.getByLabel('Your name').fill(p.name);
        await tab.getByLabel('Phone').fill('12345');
        await tab.getByLabel('I agree').check();
        await tab.getByRole('button', { name: 'Register' }).click();
        await reached(tab, 'invalid');
        const err = tab.locator('[data-formd-error=phone]');
        assert.equal(await err.textContent(), 'Phone is not a valid phone number');
        assert.equal(await tab.evaluate(() => document.getElementById('p')?.nextElementSibling?.getAttribute('data-formd-error')), 'phone');
        assert.match((await tab.locator('#p').getAttribute('aria-describedby')) || '', /formd-err-embed-phone/);

        await tab.getByLabel('Phone').fill(p.phone);
        await tab.getByRole('button', { name: 'Register' }).click();
        await reached(tab, 'received');
        assert.equal(await tab.locator('[data-formd-status]').getAttribute('role'), 'status');
        assert.equal(await statusText(tab), 'Received. Thank you!');
        assert.equal(posts.length, 2);
        const res = await posts[1].response();
        assert.equal(res?.headers()['access-control-allow-origin'], origin, 'a CORS answer');
        const all = await server.entriesFor(p.phone, 'embed');
        assert.equal(all.length, 1);
        assert.equal(all[0].status, 'stored');
        assert.equal(all[0].data.consent, true);
      });
    } finally {
      await new Promise((r) => site.close(() => r(undefined)));
    }
  });

  test('a site the form does not list: "this site may not send to this form", and no retries', async () => {
    // Issue 34: the preflight passes and the 403 origin-not-allowed is
    // readable, so the SDK ends the entry instead of saving and retrying.
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Other</title>
<script type="module" src="${server.base}/sdk/formd.js"></script></head><body>
<form data-formd="elsewhere" method="post" action="${server.base}/v1/forms/elsewhere/submissions">
<label for="n">Your name</label><input id="n" name="name" required>
<label for="p">Phone</label><input id="p" name="phone" type="tel" required>
<button>Register</button></form></body></html>`;
    const site = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page);
    });
    await new Promise((r) => site.listen(0, '127.0.0.1', () => r(undefined)));
    const origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (site.address()).port}`;
    try {
      await withBrowser({}, async (ctx) => {
        const { page: tab, posts } = await openForm(ctx, origin, '/');
        const p = person();
        await tab.getByLabel('Your name').fill(p.name);
        await tab.getByLabel('Phone').fill(p.phone);
        await tab.getByRole('button', { name: 'Register' }).click();
        await reached(tab, 'failed');
        assert.equal(await statusText(tab), 'The form could not be sent. This site may not send to this form.');
        assert.ok(!(await statusText(tab)).includes('Saved on this device'));
        const events = await tab.evaluate(() => /** @type {any} */ (window).__events.map((/** @type {any} */ e) => e.state));
        assert.ok(!events.includes('saved'), `no "saved" on the way: ${events}`);
        const res = await posts[0].response();
        assert.equal(res?.status(), 403);
        assert.equal(res?.headers()['access-control-allow-origin'], origin, 'the refusal is readable');
        assert.deepEqual(await outbox(tab), [], 'the outbox let go: nothing to retry');
        assert.equal(posts.length, 1);
        assert.equal((await server.entriesFor(p.phone, 'elsewhere')).length, 0);
      });
    } finally {
      await new Promise((r) => site.close(() => r(undefined)));
    }
  });

  test('a form with a thank-you page: the SDK goes there once the outbox is done', async () => {
    await withBrowser({}, async (ctx) => {
      const { page } = await openForm(ctx, server.base, '/f/thanks');
      const p = person();
      await field(page, 'Name').fill(p.name);
      await field(page, 'Mobile phone').fill(p.phone);
      await Promise.all([page.waitForURL(server.base + '/healthz'), submitButton(page).click()]);
      assert.deepEqual(await outbox(page), [], 'the entry left the outbox before the page went');
      const all = await server.entriesFor(p.phone, 'thanks');
      assert.equal(all.length, 1);
      assert.equal(all[0].status, 'stored');
    });
  });

  test('phone-sized screenshots; mobile layout and keyboard use', async () => {
    const out = ensureOutputDir();
    const phone = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };
    for (const locale of ['en-US', 'zh-CN']) {
      await withBrowser({ ...phone, locale }, async (ctx) => {
        const { page } = await openForm(ctx);
        const zh = locale === 'zh-CN';
        assert.equal(await page.getAttribute('html', 'lang'), zh ? 'zh-CN' : 'en');
        assert.ok(await page.getByRole('button', { name: zh ? '提交' : 'Submit' }).isVisible());
        const layout = await page.evaluate(() => ({
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          button: document.querySelector('button')?.getBoundingClientRect().height || 0,
          font: Math.min(...Array.from(document.querySelectorAll('input:not([type=hidden])')).map((i) => parseFloat(getComputedStyle(i).fontSize))),
        }));
        assert.ok(layout.overflow <= 0, `scrolls sideways by ${layout.overflow}px`);
        assert.ok(layout.button >= 44, `button is ${layout.button}px tall`);
        assert.ok(layout.font >= 16, `input text is ${layout.font}px: phones zoom in below 16px`);
        await page.screenshot({ path: join(out, `hosted-${zh ? 'zh' : 'en'}-390.png`), fullPage: true });

        // Keyboard: Tab goes through the fields to the button, never into
        // the honeypot; Enter submits; errors come in the page's language.
        const order = [];
        for (let i = 0; i < 5; i++) {
          await page.keyboard.press('Tab');
          order.push(await page.evaluate(() => document.activeElement?.getAttribute('name') || document.activeElement?.tagName));
        }
        assert.deepEqual(order, ['name', 'phone', 'email', 'tickets', 'BUTTON'], 'the honeypot is never focused');
        await page.locator('#f-name').focus();
        await page.keyboard.type('Zhou');
        await page.locator('#f-phone').focus();
        await page.keyboard.type('12345');
        await page.keyboard.press('Enter');
        await reached(page, 'invalid');
        assert.equal(await page.locator('#e-phone').textContent(), zh ? '请填写有效的电话号码。' : 'Mobile phone is not a valid phone number');
        await page.screenshot({ path: join(out, `hosted-${zh ? 'zh' : 'en'}-390-invalid.png`), fullPage: true });
      });
    }
  });
});
