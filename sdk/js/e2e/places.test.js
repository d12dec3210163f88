// End-to-end test of places.js (issue 32) in real headless Chromium
// against a real `formd serve`: a custom front-end's own form, served
// from formd's origin, reads the public definition and marks the full
// session as the hosted page does ("full — waitlist" on a form that
// waitlists; "full", disabled, on one that turns people away), in English
// and in Chinese; and the session the server decided full is the one
// marked.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Formd, withBrowser, submit, startFormd } from '../../../e2e/harness/harness.js';

const yaml = `
id: fair
fields:
  - {name: name, type: text, required: true, label: Name}
  - name: session
    type: select
    required: true
    label: {en: Session, zh: 场次}
    options:
      - {value: am, label: {en: Morning, zh: 上午}, capacity: 1}
      - {value: pm, label: {en: Afternoon, zh: 下午}, capacity: 2}
when_full: waitlist
---
id: talks
fields:
  - {name: name, type: text, required: true, label: Name}
  - name: talk
    type: select
    required: true
    label: Talk
    options:
      - {value: a, label: Talk A, capacity: 1}
      - {value: b, label: Talk B, capacity: 1}
`;

// A custom front-end: its own form, places.js and a fetch of the
// definition from formd.
const custom = (form, field, lang, options) => `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><title>Custom</title></head><body>
<form><label for="s">${field}</label><select id="s" name="${field}">${options.map(([v, l]) => `<option value="${v}">${l}</option>`).join('')}</select></form>
<script type="module">
import { markPlaces } from '/sdk/places.js';
const def = await (await fetch('/v1/forms/${form}')).json();
markPlaces(document.querySelector('form'), def);
document.body.dataset.marked = '1';
</script></body></html>`;

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;

describe('options with places in a custom front-end', () => {
  before(async () => {
    ({ srv: server, stop } = await startFormd({ yaml }));
    await submit(server.base, 'fair', { name: 'Li Lei', session: 'am' }, { key: 'k1' });
    await submit(server.base, 'fair', { name: 'Han Meimei', session: 'pm' }, { key: 'k2' });
    await submit(server.base, 'talks', { name: 'Li Lei', talk: 'b' }, { key: 'k3' });
  });
  after(async () => {
    await stop?.();
  });

  test('the full session is marked, in English and in Chinese, as the hosted page marks it', async () => {
    await withBrowser({ locale: 'en-US' }, async (ctx) => {
      const page = ctx.pages()[0] || (await ctx.newPage());
      const show = async (path, html) => {
        await page.route(server.base + path, (r) => r.fulfill({ contentType: 'text/html; charset=utf-8', body: html }));
        await page.goto(server.base + path);
        await page.waitForSelector('body[data-marked]');
      };
      const texts = (name) => page.getByRole('combobox', { name }).locator('option').evaluateAll((os) => os.map((o) => `${o.textContent}${o.disabled ? ' (disabled)' : ''}`));
      await show('/custom-en.html', custom('fair', 'session', 'en', [['am', 'Morning'], ['pm', 'Afternoon']]));
      assert.deepEqual(await texts('session'), ['Morning — full, waitlist', 'Afternoon']);
      await show('/custom-zh.html', custom('fair', 'session', 'zh-CN', [['am', '上午'], ['pm', '下午']]));
      assert.deepEqual(await texts('session'), ['上午（已满，可候补）', '下午']);
      await show('/custom-talks.html', custom('talks', 'talk', 'en', [['a', 'Talk A'], ['b', 'Talk B']]));
      assert.deepEqual(await texts('talk'), ['Talk A', 'Talk B — full (disabled)']);
      // The hosted page says the same.
      await page.goto(server.base + '/f/fair?lang=en');
      assert.deepEqual(await texts('Session'), ['Choose…', 'Morning — full, waitlist', 'Afternoon']);
    });
  });
});
