// End-to-end tests of the proof-of-work challenge (issue 22) in real
// headless Chromium against a real `formd serve`: the hosted page (the
// vendored altcha widget) and the SDK (challenge.js) each solve and submit
// once; a scripted POST without a solution is kept as spam; without
// JavaScript the page says, in its language, that the form needs it.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Formd, withBrowser, waitFor, startFormd } from '../../../e2e/harness/harness.js';

const forms = join(dirname(fileURLToPath(import.meta.url)), 'challenge-forms.yaml');
/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;

describe('proof-of-work', () => {
  before(async () => {
    ({ srv: server, stop } = await startFormd({ forms }));
  });
  after(async () => {
    await stop?.();
  });

  test('the hosted page solves in the background, says so to screen readers, and submits once', async () => {
    await withBrowser({ locale: 'en-US' }, async (ctx) => {
      ctx.setDefaultTimeout(30000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      const posts = [];
      const challenges = [];
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url().includes('/submissions')) posts.push(r);
        if (r.url().includes('/v1/forms/pow/challenge')) challenges.push(r);
      });
      await page.goto(server.base + '/f/pow');
      await page.waitForSelector('form[data-formd][data-state]');
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Wang Fang');
      // The live region announces the widget's state in the page language.
      const live = page.locator('[data-formd-pow]');
      await waitFor(async () => (await live.textContent()) === 'Browser checked: ready to send', { timeout: 30000, what: 'the widget verified' });
      assert.equal(await live.getAttribute('aria-live'), 'polite');
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.waitForSelector('form[data-state="received"]', { timeout: 30000 });
      assert.equal(posts.length, 1, 'one POST');
      assert.equal(challenges.length, 1, 'one challenge');
      const sent = JSON.parse(posts[0].postData() || '{}');
      assert.ok(sent.altcha, 'the solution went with the submission');
      const entries = await server.entries('pow');
      assert.equal(entries.length, 1);
      assert.equal(entries[0].status, 'stored');
      assert.equal(entries[0].data.altcha, undefined, 'the solution is not kept as a field');
    });
  });

  test('the SDK on another page fetches, solves in a worker and submits once', async () => {
    await withBrowser({}, async (ctx) => {
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/healthz');
      const got = await page.evaluate(async () => {
        // @ts-ignore: a module URL the browser resolves
        const m = await import('/sdk/formd.js');
        const c = m.createClient({ arrivals: false });
        const url = location.origin + '/v1/forms/pow/submissions';
        c.challenge.prepare(url);
        const ev = await c.submit('pow', { name: 'Li Lei' }, { url });
        return { state: ev.state, key: ev.key, workers: typeof Worker };
      });
      assert.equal(got.state, 'received');
      const entries = await server.entries('pow');
      assert.equal(entries.filter((e) => e.key === got.key && e.status === 'stored').length, 1);
    });
  });

  test('a scripted POST without a solution is kept as spam, with its reason', async () => {
    const r = await fetch(server.base + '/v1/forms/powkeep/submissions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'bot-1' },
      body: JSON.stringify({ name: 'Bot' }),
    });
    assert.equal(r.status, 201);
    assert.equal((await r.json()).status, 'received', 'answered like a success');
    const e = await waitFor(async () => (await server.entries('powkeep')).find((x) => x.key === 'bot-1'), { what: 'the spam entry' });
    assert.equal(e.status, 'spam');
    // The console's entry page reads the same (the admin API's entry).
    const d = await fetch(`${server.base}/v1/admin/forms/powkeep/entries/${e.id}`, { headers: { Authorization: `Bearer ${server.token}` } });
    assert.equal(d.status, 200);
    assert.equal((await d.json()).spam_reason, 'challenge-missing');
    // Rescued: decided again as a real submission.
    const n = await fetch(`${server.base}/v1/admin/forms/powkeep/entries/${e.id}/not-spam`, { method: 'POST', headers: { Authorization: `Bearer ${server.token}` } });
    assert.equal(n.status, 200);
    assert.equal((await n.json()).status, 'stored');
  });

  for (const [locale, text] of [
    ['en-US', 'This form needs JavaScript to send'],
    ['zh-CN', '此表单需要启用 JavaScript 才能提交'],
  ]) {
    test(`without JavaScript the page says it needs it (${locale})`, async () => {
      await withBrowser({ javaScriptEnabled: false, locale }, async (ctx) => {
        const page = ctx.pages()[0] || (await ctx.newPage());
        await page.goto(server.base + '/f/pow');
        const alert = page.getByRole('alert');
        assert.match((await alert.textContent()) || '', new RegExp(text));
      });
    });
  }
});
