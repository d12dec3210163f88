// The form builder (issue 31) in headless Chromium against a real formd,
// through accessible names as a screen reader finds them: an organizer
// signs in, makes the photo registration from its template, changes a
// label in both languages, adds a required select with three choices,
// moves it above another field, sees the preview follow, publishes,
// opens the hosted page and submits (twice, with a photo); then lowers
// the places below the entries and sees the confirmation; then goes back
// to the first version. An editor of another site cannot reach the form
// by URL. Last, the fair with its entries is deleted once its id is typed
// (a wrong id deletes nothing). Screenshots of the builder at 1280 and 390 px, English and
// Chinese, go to docs/console/ (FORMD_SCREENSHOTS=0 skips them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { signIn, waitFor, docsDir, startConsole } from '../harness/harness.js';

const password = 'correct horse battery staple';
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
let srv, browser, stop, ctx, page;

before(async () => {
  // --places-ttl 0s: the hosted page's "full" marks read the places of
  // the moment, not of up to a second ago (the default), which a fast
  // machine outruns between a registration and the next page.
  ({ srv, browser, stop } = await startConsole({ yaml: 'id: other\nsite: elsewhere\nfields: [{name: name, type: text}]\n', args: ['--places-ttl', '0s'] }, { owner: false }));
  ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'Asia/Shanghai' });
  ctx.setDefaultTimeout(15000);
  page = await ctx.newPage();
});

after(() => stop?.());

function jpeg(size) {
  const b = randomBytes(size);
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]).copy(b);
  return b;
}

const field = (n, label) => page.getByRole('group', { name: `Field ${n}: ${label}` });

test('an organizer makes the photo registration from its template', async () => {
  await page.goto(srv.setup);
  await page.getByLabel('E-mail').fill('owner@example.org');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create the owner account' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await page.getByRole('link', { name: 'New form' }).click();
  await page.getByRole('radio', { name: 'Exam or class registration with a photo' }).check();
  await page.getByRole('radio', { name: 'English and Chinese' }).check();
  await page.getByLabel('Title (English)').fill('Spring exam 2027');
  await page.getByLabel('Title (Chinese)').fill('2027 春季考试');
  await page.getByLabel('Site', { exact: true }).fill('school');
  // The address is suggested from the title and said to be free.
  await waitFor(async () => (await page.getByLabel('Address of the form').inputValue()) === 'spring-exam-2027', { what: 'the suggested address' });
  await page.getByRole('status').filter({ hasText: 'This address is free.' }).waitFor();
  await page.getByRole('button', { name: 'Create the draft' }).click();
  await page.getByRole('heading', { name: 'Build: Spring exam 2027' }).waitFor();
  assert.match(await page.getByRole('status').first().textContent(), /The draft is made/);
});

test('labels in both languages, a required select with three choices, moved by keyboard; the preview follows', async () => {
  const name = field(1, 'Full name');
  await name.getByLabel('Question (English)').fill('Your full name');
  await name.getByLabel('Question (Chinese)').fill('您的姓名');
  // The draft saves as the organizer types and the preview reloads.
  const preview = page.frameLocator('iframe[title="Preview in Chinese"]');
  await waitFor(async () => (await preview.getByLabel('您的姓名').count()) === 1, { what: 'the Chinese preview to show the new label' });
  await page.getByLabel('New field').selectOption({ label: 'One choice' });
  await page.getByRole('button', { name: 'Add the field' }).click();
  const sel = field(7, 'select');
  await sel.waitFor();
  // The new field has the focus, for a keyboard user.
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'f6.name');
  await sel.getByLabel('Name in exports').fill('session');
  await sel.getByLabel('Question (English)').fill('Session');
  await sel.getByLabel('Question (Chinese)').fill('场次');
  await sel.getByLabel('Required').check();
  await sel.getByLabel('Choices').fill('morning | Morning | 上午\nafternoon | Afternoon | 下午\nevening | Evening | 晚上');
  // Move it above the photo with the keyboard.
  await sel.getByRole('button', { name: 'Move up: select' }).focus();
  await page.keyboard.press('Enter');
  await field(6, 'Session').waitFor();
  await field(7, 'Photo').waitFor();
  const en = page.frameLocator('iframe[title="Preview in English"]');
  await waitFor(async () => (await en.getByLabel('Session').count()) === 1, { what: 'the English preview to show the select' });
  // The preview, as a participant, at phone width: its messages too.
  const width = page.getByRole('group', { name: 'Preview width' });
  await width.getByRole('button', { name: 'Phone' }).click();
  assert.equal(await width.getByRole('button', { name: 'Phone' }).getAttribute('aria-pressed'), 'true');
  await en.getByRole('button', { name: 'Submit' }).click();
  await en.getByText('Please correct the marked fields.').waitFor();
});

async function register(name, no, email, session) {
  const p = await ctx.newPage();
  await p.goto(srv.base + '/f/spring-exam-2027');
  await p.getByRole('textbox', { name: 'Your full name' }).fill(name);
  await p.getByRole('textbox', { name: 'Student number' }).fill(no);
  await p.getByRole('textbox', { name: 'E-mail' }).fill(email);
  await p.getByLabel('Level').selectOption('beginner');
  await p.getByLabel('Session').selectOption(session);
  await p.getByLabel('Photo').setInputFiles({ name: 'me.jpg', mimeType: 'image/jpeg', buffer: jpeg(20 * 1024) });
  await p.getByRole('button', { name: 'Submit' }).click();
  await p.getByRole('status').filter({ hasText: 'Received. Thank you!' }).waitFor();
  await p.close();
}

test('publish, and participants register on the hosted page', async () => {
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Published: participants see this version now.' }).waitFor();
  await register('Li Lei', 'S1', 'li@example.org', 'morning');
  await register('Han Meimei', 'S2', 'han@example.org', 'evening');
  const entries = await srv.entries('spring-exam-2027');
  assert.deepEqual(entries.map((e) => e.data.session).sort(), ['evening', 'morning']);
});

test('places below the entries: the confirmation says so before anything changes', async () => {
  await page.goto(srv.base + '/admin/forms/spring-exam-2027/build');
  await page.getByLabel('Number of places').fill('1');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.getByRole('heading', { name: 'Check the changes before they are saved' }).waitFor();
  await page.getByRole('alert').filter({ hasText: 'These changes reach entries already collected' }).waitFor();
  assert.match(await page.locator('.confirm').textContent(), /Places changes from 100 to 1 on a form with 2 entries/);
  await page.getByRole('button', { name: 'Publish these changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Published' }).waitFor();
});

test('roll back to the first version, itself a change with its confirmation', async () => {
  await page.getByRole('link', { name: 'Versions' }).click();
  const table = page.getByRole('table', { name: 'Every published version, the newest first' });
  assert.match(await table.textContent(), /Form created/);
  assert.match(await table.textContent(), /capacity: 100 → 1/);
  await table.getByRole('button', { name: 'Go back to version 1' }).click();
  await page.getByRole('heading', { name: 'Check the changes before they are saved' }).waitFor();
  await page.getByRole('button', { name: 'Yes, go back to version 1' }).click();
  await page.getByRole('status').filter({ hasText: 'The earlier version is back' }).waitFor();
  assert.match(await page.getByRole('table').textContent(), /Earlier version restored/);
});

test('an editor of another site cannot see or build on this form', async () => {
  const r = await fetch(srv.base + '/v1/admin/accounts', {
    method: 'POST',
    headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: 'oz@example.org', role: 'editor', sites: ['elsewhere'], password }),
  });
  assert.ok(r.ok, `add the editor: ${r.status} ${await r.text()}`);
  const other = await browser.newContext({ locale: 'en-US' });
  const p = await other.newPage();
  await signIn(p, srv, 'oz@example.org', password);
  assert.doesNotMatch(await p.locator('main').textContent(), /Spring exam/);
  for (const path of ['/build', '/versions', '/preview?in=en']) {
    const resp = await p.goto(srv.base + '/admin/forms/spring-exam-2027' + path);
    assert.equal(resp.status(), 404, path);
  }
  await other.close();
});

// Issue 32's session features made in the builder: a fair with two
// sessions of one place each and a waitlist each, a question asked only
// for the morning, a hidden field the link fills, two steps. The hosted
// page marks the full session; a change of a session's places on the
// form with entries asks for the confirmation.
async function joinFair(name, session, { lunch = false, expect }) {
  const p = await ctx.newPage();
  await p.goto(srv.base + '/f/spring-fair?utm_source=poster');
  await p.getByRole('textbox', { name: 'Name' }).fill(name);
  await p.getByLabel('Session').selectOption(session);
  await p.getByRole('button', { name: 'Next' }).click();
  if (lunch) await p.getByRole('checkbox', { name: 'Lunch' }).check();
  await p.getByRole('button', { name: 'Submit' }).click();
  await p.getByRole('status').filter({ hasText: expect }).waitFor();
  await p.close();
}

test('a fair with two sessions, each its own places and waitlist, made in the builder', async () => {
  await page.goto(srv.base + '/admin/forms/new?lang=en');
  await page.getByRole('radio', { name: 'A blank form' }).check();
  await page.getByRole('radio', { name: 'English and Chinese' }).check();
  await page.getByLabel('Title (English)').fill('Spring fair');
  await page.getByLabel('Title (Chinese)').fill('春季招聘会');
  await page.getByLabel('Site', { exact: true }).fill('school');
  await waitFor(async () => (await page.getByLabel('Address of the form').inputValue()) === 'spring-fair', { what: 'the suggested address' });
  await page.getByRole('button', { name: 'Create the draft' }).click();
  await page.getByRole('heading', { name: 'Build: Spring fair' }).waitFor();

  await page.getByLabel('New field').selectOption({ label: 'One choice' });
  await page.getByRole('button', { name: 'Add the field' }).click();
  const session = field(2, 'select');
  await session.getByLabel('Name in exports').fill('session');
  await session.getByLabel('Question (English)').fill('Session');
  await session.getByLabel('Question (Chinese)').fill('场次');
  await session.getByLabel('Required').check();
  await session.getByLabel('Choices').fill('am | Morning | 上午\npm | Afternoon | 下午');
  await page.getByRole('button', { name: 'Save the draft' }).click();
  // The choices' places boxes come with the saved draft.
  const places = field(2, 'Session').getByRole('group', { name: 'Places per choice' });
  await places.getByLabel('Places: Morning').fill('1');
  await places.getByLabel('Places: Afternoon').fill('1');
  await page.getByLabel('When every place is taken').selectOption({ label: 'Put people on a waitlist' });

  await page.getByLabel('New field').selectOption({ label: 'Tick box' });
  await page.getByRole('button', { name: 'Add the field' }).click();
  const lunch = field(3, 'checkbox');
  await lunch.getByLabel('Name in exports').fill('lunch');
  await lunch.getByLabel('Question (English)').fill('Lunch');
  await lunch.getByLabel('Question (Chinese)').fill('午餐');
  const when = lunch.getByRole('group', { name: 'When to ask this question' });
  await when.getByLabel('Ask only depending on').selectOption({ label: 'Session' });
  await when.getByLabel('Whose answer').selectOption({ label: 'is' });
  await when.getByLabel('Answer', { exact: true }).fill('am');

  await page.getByLabel('New field').selectOption({ label: 'Hidden (where the sign-up came from)' });
  await page.getByRole('button', { name: 'Add the field' }).click();
  await field(4, 'hidden').getByLabel('Name in exports').fill('utm_source');

  const steps = page.getByRole('group', { name: 'Steps' });
  await steps.getByRole('button', { name: 'Add a step' }).click();
  await page.getByRole('group', { name: 'Steps' }).getByRole('button', { name: 'Add a step' }).click();
  await page.getByLabel('Title of step 1 (English)').fill('You');
  await page.getByLabel('Title of step 1 (Chinese)').fill('您');
  await page.getByLabel('Title of step 2 (English)').fill('Lunch');
  await page.getByLabel('Title of step 2 (Chinese)').fill('午餐');
  await field(3, 'Lunch').getByLabel('Step', { exact: true }).selectOption({ label: 'Step 2' });
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.getByRole('status').filter({ hasText: 'Published: participants see this version now.' }).waitFor();

  await joinFair('Li Lei', 'am', { lunch: true, expect: 'Received. Thank you!' });
  await joinFair('Han Meimei', 'am', { expect: 'Received: you are on the waitlist.' });
  await joinFair('Wei Hua', 'pm', { expect: 'Received. Thank you!' });
  const entries = await srv.entries('spring-fair');
  assert.deepEqual(entries.map((e) => `${e.data.name} ${e.data.session} ${e.status} ${e.data.lunch ?? '-'} ${e.data.utm_source}`).sort(), [
    'Han Meimei am waitlisted false poster', 'Li Lei am stored true poster', 'Wei Hua pm stored - poster']);
  // The hosted page marks both full sessions, in each language.
  const p = await ctx.newPage();
  await p.goto(srv.base + '/f/spring-fair?lang=en');
  assert.equal((await p.getByLabel('Session').locator('option[value=am]').textContent()).trim(), 'Morning — full, waitlist');
  await p.goto(srv.base + '/f/spring-fair?lang=zh');
  assert.equal((await p.getByLabel('场次').locator('option[value=pm]').textContent()).trim(), '下午（已满，可候补）');
  await p.close();

  // A session's places changed on a form with entries: the confirmation.
  await page.goto(srv.base + '/admin/forms/spring-fair/build');
  await field(2, 'Session').getByLabel('Places: Morning').fill('2');
  await page.getByRole('button', { name: 'Publish', exact: true }).click();
  await page.getByRole('heading', { name: 'Check the changes before they are saved' }).waitFor();
  assert.match(await page.locator('.confirm').textContent(), /am 1, pm 1.*am 2, pm 1/s);
  await page.getByRole('button', { name: 'Publish these changes' }).click();
  await page.getByRole('status').filter({ hasText: 'Published' }).waitFor();
  if (process.env.FORMD_SCREENSHOTS !== '0') {
    // docs/builder/: the sessions in the builder and on the proof page.
    mkdirSync(join(docsDir, 'builder'), { recursive: true });
    for (const lang of ['en', 'zh']) {
      await page.goto(`${srv.base}/admin/forms/spring-fair/build?lang=${lang}`);
      await page.screenshot({ path: join(docsDir, 'builder', `sessions-${lang}.png`), fullPage: true });
      await page.goto(`${srv.base}/admin/forms/spring-fair/proof?lang=${lang}`);
      await page.screenshot({ path: join(docsDir, 'builder', `proof-places-${lang}.png`), fullPage: true });
    }
    await page.goto(`${srv.base}/admin/forms/spring-fair/build?lang=en`);
  }
});

test('axe finds nothing on the builder\'s pages, in English and in Chinese', async () => {
  const state = await ctx.storageState();
  // The console's CSP allows only its own scripts: axe comes in with the
  // CSP bypassed, for this context only.
  const c = await browser.newContext({ storageState: state, bypassCSP: true, viewport: { width: 390, height: 844 } });
  const p = await c.newPage();
  const found = [];
  for (const lang of ['en', 'zh']) {
    for (const path of ['/admin/forms/new', '/admin/forms/new?import=1', '/admin/forms/spring-exam-2027/build', '/admin/forms/spring-exam-2027/versions',
      '/admin/forms/spring-exam-2027/preview?in=' + lang, '/admin/forms/spring-fair/build', '/admin/forms/spring-fair/preview?in=' + lang,
      '/admin/forms/spring-fair/delete']) {
      await p.goto(`${srv.base}${path}${path.includes('?') ? '&' : '?'}lang=${lang}`);
      await p.addScriptTag({ content: axeSource });
      const result = await p.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
      for (const v of result.violations) found.push(`${lang} ${path}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    }
  }
  await c.close();
  assert.deepEqual(found, []);
});

test('screenshots of the builder, desktop and phone, English and Chinese', { skip: process.env.FORMD_SCREENSHOTS === '0' }, async () => {
  mkdirSync(join(docsDir, 'console'), { recursive: true });
  const state = await ctx.storageState();
  for (const [width, height, device] of [[1280, 900, 'desktop'], [390, 844, 'phone']]) {
    for (const lang of ['en', 'zh']) {
      const c = await browser.newContext({ viewport: { width, height }, storageState: state, locale: lang === 'zh' ? 'zh-CN' : 'en-US', timezoneId: 'Asia/Shanghai' });
      const p = await c.newPage();
      await p.goto(`${srv.base}/admin/forms/spring-exam-2027/build?lang=${lang}`);
      await p.waitForLoadState('networkidle');
      await p.screenshot({ path: join(docsDir, 'console', `builder-${device}-${lang}.png`), fullPage: true });
      await p.goto(`${srv.base}/admin/forms/new?lang=${lang}`);
      await p.screenshot({ path: join(docsDir, 'console', `newform-${device}-${lang}.png`), fullPage: true });
      await c.close();
    }
  }
});

test('a form with entries is deleted only once its id is typed', async () => {
  await page.goto(srv.base + '/admin/forms/spring-fair?lang=en');
  await page.getByRole('link', { name: 'Delete the form and its entries…' }).click();
  await page.getByRole('heading', { name: /^Delete / }).waitFor();
  const erases = page.getByRole('list', { name: 'Deleting the form erases, for good:' });
  assert.match(await erases.textContent(), /Entries \(stored\): 3/);
  // Another form's id: nothing is deleted, and the field says so.
  await page.getByLabel("Type the form's id to confirm").fill('spring-exam-2027');
  await page.getByRole('button', { name: 'Delete the form and everything in it' }).click();
  await page.getByRole('alert').filter({ hasText: 'is not this form\'s id: nothing was deleted.' }).waitFor();
  assert.equal(await page.getByLabel("Type the form's id to confirm").getAttribute('aria-invalid'), 'true');
  assert.equal((await srv.entries('spring-fair')).length, 3);
  await page.getByLabel("Type the form's id to confirm").fill('spring-fair');
  await page.getByRole('button', { name: 'Delete the form and everything in it' }).click();
  await page.getByRole('status').filter({ hasText: 'The form is deleted.' }).waitFor();
  const gone = await fetch(srv.base + '/f/spring-fair');
  assert.equal(gone.status, 404);
});
