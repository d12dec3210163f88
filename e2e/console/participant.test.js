// The participant's page (/e/{token}) in headless Chromium against a real
// formd: a change of session saved, a change to a full session refused
// on the page with the place kept, an erasure request confirmed — each
// found by its accessible name — and axe finds nothing on the page, in
// English and in Chinese (issue 33).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { startConsole } from '../harness/harness.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const forms = `
id: fair
title: {en: Spring fair, zh: 春季集市}
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: email, type: email, required: true, label: {en: E-mail, zh: 邮箱}}
  - name: session
    type: select
    required: true
    label: {en: Session, zh: 场次}
    options:
      - {value: morning,   label: {en: Morning,   zh: 上午}, capacity: 1}
      - {value: afternoon, label: {en: Afternoon, zh: 下午}, capacity: 1}
      - {value: evening,   label: {en: Evening,   zh: 晚上}}
unique: [[email]]
when_full: waitlist
edit_until: 2099-01-01T00:00:00Z
`;

let srv, browser, stop;

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }, { owner: false }));
});

after(() => stop?.());

async function register(key, name, session) {
  const r = await fetch(`${srv.base}/v1/forms/fair/submissions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key },
    body: JSON.stringify({ name, email: `${key}@example.org`, session }),
  });
  const body = await r.json();
  assert.equal(r.status, 201, JSON.stringify(body));
  return body.manage;
}

test('change, a full session refused, erasure requested: by accessible names, without a script', async () => {
  const ann = await register('ann', 'Ann', 'morning');
  await register('bo', 'Bo', 'afternoon');
  const ctx = await browser.newContext({ javaScriptEnabled: false, locale: 'en-US' });
  const page = await ctx.newPage();
  await page.goto(`${srv.base}${ann}?lang=en`);
  const change = page.getByRole('region', { name: 'Change my answers' });
  await change.getByLabel('Name').fill('Ann B');
  await change.getByLabel('Session').selectOption('evening');
  await change.getByRole('button', { name: 'Save my changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Your changes are saved.' }).waitFor();
  const answers = page.getByRole('region', { name: 'Your answers' });
  assert.match(await answers.textContent(), /Ann B/);
  assert.match(await answers.textContent(), /Evening/);

  await change.getByLabel('Session').selectOption('afternoon');
  await change.getByRole('button', { name: 'Save my changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Afternoon has no place left: nothing was changed, and your place is kept.' }).waitFor();
  assert.match(await page.getByRole('region', { name: 'Your answers' }).textContent(), /Evening/);

  const erasure = page.getByRole('region', { name: 'Erase my data' });
  await erasure.getByLabel('Yes, erase my registration and my answers (this cannot be undone).').check();
  await erasure.getByRole('button', { name: 'Ask for my data to be erased' }).click();
  await page.getByRole('region', { name: 'Erase my data' }).getByRole('status').filter({ hasText: 'You asked for your data to be erased' }).waitFor();
  await ctx.close();
});

test('axe finds nothing on the participant\'s page, in English and in Chinese', async () => {
  const cy = await register('cy', 'Cy', 'evening');
  const ctx = await browser.newContext({ bypassCSP: true, viewport: { width: 390, height: 844 } });
  const p = await ctx.newPage();
  const found = [];
  for (const lang of ['en', 'zh']) {
    await p.goto(`${srv.base}${cy}?lang=${lang}`);
    if (lang === 'zh') await p.getByRole('region', { name: '修改我的答案' }).waitFor();
    await p.addScriptTag({ content: axeSource });
    const result = await p.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
    for (const v of result.violations) found.push(`${lang}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  await ctx.close();
  assert.deepEqual(found, []);
});
