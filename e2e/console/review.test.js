// Bulk review in the owner's console, in headless Chromium against a real
// formd (issue 32): the pending entries' boxes found by their accessible
// names; with JavaScript "all pending on this page" ticks them and
// unticking one leaves it; an entry another editor approved meanwhile is
// counted as already decided, not an error; without JavaScript "all
// pending on this page" declines the page's pending entries and the
// waitlist moves up. axe finds nothing on the page with the bulk review,
// in English and in Chinese.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { signedInPage, submit, startConsole } from '../harness/harness.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const forms = `
id: crew
title: {en: Festival crew, zh: 音乐节志愿者}
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
capacity: 3
when_full: waitlist
review: true
`;

let srv, browser, stop;
const ids = {};

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }));
  for (const name of ['Ann', 'Bo', 'Cy', 'Dee']) ids[name] = (await submit(srv.base, 'crew', { name })).id;
});

after(() => stop?.());

function signedIn(javaScriptEnabled) {
  return signedInPage(browser, srv, { javaScriptEnabled, bypassCSP: true });
}

async function api(path) {
  const r = await fetch(srv.base + path, { method: 'POST', headers: { Authorization: `Bearer ${srv.token}` } });
  assert.equal(r.status, 200, await r.text());
}

test('with JavaScript: select all, untick one, approve; one decided meanwhile is counted', async () => {
  const { ctx, page } = await signedIn(true);
  await page.goto(srv.base + '/admin/forms/crew/submissions');
  const boxes = page.getByRole('checkbox', { name: /^Select the submission received / });
  assert.equal(await boxes.count(), 3, 'a box per pending entry, none for the waitlisted one');
  const all = page.getByRole('checkbox', { name: 'Select all pending entries on this page' });
  await all.check();
  for (let i = 0; i < 3; i++) assert.ok(await boxes.nth(i).isChecked(), `box ${i} ticked by "all"`);
  await boxes.nth(0).uncheck(); // the newest pending entry: Cy
  assert.equal(await all.isChecked(), false, 'unticking one leaves "all"');
  await api(`/v1/admin/forms/crew/entries/${ids.Bo}/approve`); // another editor, meanwhile
  await page.getByRole('button', { name: 'Approve selected' }).click();
  const result = page.getByRole('status');
  await result.filter({ hasText: 'Approved: 1.' }).waitFor();
  assert.match(await result.textContent(), /Already decided by someone else, left as they were: 1\./);
  await ctx.close();
});

test('without JavaScript: decline all pending on the page; the waitlist moves up', async () => {
  const { ctx, page } = await signedIn(false);
  await page.goto(srv.base + '/admin/forms/crew/submissions?status=pending');
  assert.equal(await page.getByRole('checkbox', { name: /^Select the submission received / }).count(), 1, 'Cy alone is pending');
  await page.getByRole('checkbox', { name: 'Select all pending entries on this page' }).check();
  await page.getByRole('button', { name: 'Decline selected' }).click();
  const result = page.getByRole('status');
  await result.filter({ hasText: 'Declined: 1; their places are free.' }).waitFor();
  assert.match(await result.textContent(), new RegExp(`Promoted from the waitlist: ${ids.Dee}`));
  assert.match(await result.textContent(), /left as they were: 0\./);
  await ctx.close();
});

test('axe finds nothing on the page with the bulk review, in English and in Chinese', async () => {
  const { ctx, page } = await signedIn(true);
  const found = [];
  for (const lang of ['en', 'zh']) {
    await page.goto(`${srv.base}/admin/forms/crew/submissions?lang=${lang}`);
    await page.locator('form.bulk-review').waitFor();
    await page.addScriptTag({ content: axeSource });
    const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
    for (const v of result.violations) found.push(`${lang}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  await ctx.close();
  assert.deepEqual(found, []);
});
