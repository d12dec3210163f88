// The owner's console in headless Chromium against a real formd: sign in,
// counts moving while submissions arrive, a phone number searched as
// written differently, filter and export (the XLSX and CSV opened and
// read), cancel and promotion, not-spam, forget a person, a replay's dry
// run, a webhook's delivery log and a redelivery, what a viewer may not
// press, and another site's form out of reach by URL. Elements are found by role and label, as a screen reader finds
// them. Screenshots at 1280 and 390 px wide, in English and Chinese, go to
// docs/ (FORMD_SCREENSHOTS=0 skips them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import readXlsxFile from 'read-excel-file/node';
import { startReceiver, submit, waitFor, docsDir, tempDir, signIn as signInAt, startConsole } from '../harness/harness.js';

const opened = new Date(Date.now() - 10 * 60 * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
const forms = (hook) => `
id: spring-fair
site: community
title: {en: Spring fair registration, zh: 春季市集报名}
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: phone, type: phone, region: CN, required: true, label: {en: Phone, zh: 手机号}}
  - {name: email, type: email, label: {en: E-mail, zh: 邮箱}}
  - {name: tickets, type: number, min: 1, max: 4, label: {en: Tickets, zh: 票数}}
unique: [[phone]]
capacity: 6
when_full: waitlist
opens_at: ${opened}
spam: {honeypot: website}
notify:
  webhooks: [{url: "${hook}", secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}]
---
id: other-site-form
site: elsewhere
title: Elsewhere
fields:
  - {name: name, type: text, required: true}
`;

const password = 'correct horse battery staple';
const people = [
  ['Li Lei', '13800138000', 'lilei@example.org'], ['Han Meimei', '13800138001', 'han@example.org'],
  ['Wang Fang', '13900139002', 'wang@example.org'], ['Zhang Wei', '13700137003', 'zhang@example.org'],
  ['Chen Jing', '13600136004', 'chen@example.org'], ['Liu Yang', '13500135005', 'liu@example.org'],
  ['Zhao Lei', '13400134006', 'zhao@example.org'], ['Sun Li', '13300133007', 'sun@example.org'],
];

let srv, receiver, browser, stop, owner, ownerPage, out;
const ids = {};

before(async () => {
  receiver = await startReceiver('Qian Yu');
  ({ srv, browser, stop } = await startConsole({ yaml: forms(receiver.url), args: ['--webhook-allow', '127.0.0.0/8'] }, { owner: false }));
  owner = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, locale: 'en-US' });
  ownerPage = await owner.newPage();
  out = tempDir('console-e2e-');
});

after(async () => {
  await stop?.();
  await receiver?.close();
  out?.cleanup();
});

const signIn = (page, email) => signInAt(page, srv, email, password);

test('the setup link makes the first owner, who is signed in', async () => {
  const page = ownerPage;
  await page.goto(srv.setup);
  await page.getByRole('heading', { name: 'Set up formd' }).waitFor();
  await page.getByLabel('E-mail').fill('owner@example.org');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create the owner account' }).click();
  await page.getByRole('status').filter({ hasText: 'formd is set up' }).waitFor();
  await page.getByRole('region', { name: 'Spring fair registration' }).waitFor();
  const cookies = await owner.cookies();
  const session = cookies.find((c) => c.name === 'formd_session');
  assert.ok(session && session.httpOnly && session.sameSite === 'Lax', `session cookie ${JSON.stringify(session)}`);
});

test('the counts move while submissions arrive', async () => {
  const page = ownerPage;
  const card = page.getByRole('region', { name: 'Spring fair registration' });
  const stored = card.locator('[data-count=stored]');
  assert.equal((await stored.textContent()).trim(), '0');
  for (const [i, [name, phone, email]] of people.entries()) {
    const b = await submit(srv.base, 'spring-fair', { name, phone, email, tickets: 1 + (i % 3) });
    ids[name] = b.id;
  }
  // The page refreshes its cards by itself: 6 places, 2 on the waitlist.
  await waitFor(async () => (await card.locator('[data-count=stored]').textContent()).trim() === '6', { what: 'stored to reach 6 on the page' });
  await waitFor(async () => (await card.locator('[data-count=waitlisted]').textContent()).trim() === '2', { what: 'waitlisted to reach 2' });
  assert.match(await card.textContent(), /0 left/);
  assert.match(await card.getByRole('figure').textContent(), /peak 8 at/);
});

test('a phone number written differently is found', async () => {
  const page = ownerPage;
  await page.goto(srv.base + '/admin/forms/spring-fair/submissions');
  await page.getByLabel('Search', { exact: true }).fill('+86 139-0013-9002');
  await page.getByRole('button', { name: 'Apply' }).click();
  const rows = page.getByRole('table').getByRole('row');
  await waitFor(async () => (await rows.count()) === 2, { what: 'one row and the header' });
  assert.match(await rows.nth(1).textContent(), /Wang Fang/);
});

test('filter by status, then export: the XLSX and the CSV hold those rows', async () => {
  const page = ownerPage;
  await page.goto(srv.base + '/admin/forms/spring-fair/submissions');
  await page.getByLabel('Status').selectOption('waitlisted');
  await page.getByRole('button', { name: 'Apply' }).click();
  await waitFor(async () => (await page.getByRole('table').getByRole('row').count()) === 3, { what: 'two waitlisted rows' });
  const exports = page.getByRole('group', { name: 'Export what is shown' });
  const [xlsx] = await Promise.all([page.waitForEvent('download'), exports.getByRole('link', { name: 'XLSX' }).click()]);
  const xlsxPath = join(out.dir, 'waitlisted.xlsx');
  await xlsx.saveAs(xlsxPath);
  const sheet = await readXlsxFile(xlsxPath);
  const rows = Array.isArray(sheet[0]?.data) ? sheet[0].data : sheet;
  // For people (issue 34): formd's own columns in words, the time in the
  // browser's zone, no idempotency key.
  const zone = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  assert.deepEqual(rows[0].slice(0, 4), ['Entry', 'Status', `Received (${zone})`, 'Name']);
  assert.deepEqual(rows.slice(1).map((r) => r[1]), ['Waitlisted', 'Waitlisted']);
  assert.deepEqual(rows.slice(1).map((r) => r[3]).sort(), ['Sun Li', 'Zhao Lei']);
  const [csv] = await Promise.all([page.waitForEvent('download'), exports.getByRole('link', { name: 'CSV' }).click()]);
  const csvPath = join(out.dir, 'waitlisted.csv');
  await csv.saveAs(csvPath);
  const text = readFileSync(csvPath, 'utf8');
  assert.ok(text.startsWith('\uFEFF'), 'a UTF-8 BOM, for Excel');
  const lines = text.trim().split('\r\n');
  assert.equal(lines.length, 3, lines.join('\n'));
  assert.ok(lines.slice(1).every((l) => l.includes('"Waitlisted"')), lines.join('\n'));
  assert.ok(lines.slice(1).every((l) => /"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"/.test(l)), 'times to the second: ' + lines.join('\n'));
  // As stored, and with the apostrophe that keeps a spreadsheet from
  // reading + as a formula.
  assert.ok(lines.some((l) => l.includes(`"'+8613300133007"`)), lines.join('\n'));
});

test('cancel an entry and watch the waitlist promoted', async () => {
  const page = ownerPage;
  await page.goto(`${srv.base}/admin/forms/spring-fair/entries/${ids['Li Lei']}`);
  await page.getByRole('button', { name: 'Cancel this entry' }).click();
  const flash = page.getByRole('status').filter({ hasText: 'The entry was cancelled.' });
  await flash.waitFor();
  assert.match(await flash.textContent(), new RegExp(`Promoted from the waitlist: ${ids['Zhao Lei']}`));
  assert.match(await page.getByRole('list').filter({ hasText: 'cancelled' }).last().textContent(), /stored[\s\S]*cancelled/);
  await page.goto(`${srv.base}/admin/forms/spring-fair/entries/${ids['Zhao Lei']}`);
  assert.match(await page.locator('ol.history').textContent(), /waitlisted[\s\S]*promoted from the waitlist/);
  await page.goto(srv.base + '/admin/audit');
  // The action in words, its code on hover.
  assert.match(await page.getByRole('table').textContent(), /entry cancelled/);
  assert.equal(await page.getByText('entry cancelled', { exact: true }).first().getAttribute('title'), 'entry.cancel');
});

test('mark not-spam decides a spam submission again', async () => {
  const page = ownerPage;
  const b = await submit(srv.base, 'spring-fair', { name: 'Zhou Xun', phone: '13200132008', website: 'http://spam.example' });
  assert.ok(b.id, 'spam is answered like a success');
  await page.goto(`${srv.base}/admin/forms/spring-fair/entries/${b.id}`);
  assert.match(await page.locator('dl.facts').first().textContent(), /spam/);
  await page.getByRole('button', { name: 'Not spam: decide it again' }).click();
  await page.getByRole('status').filter({ hasText: 'Decided again: waitlisted.' }).waitFor();
});

test('forget a person: see first, then erase', async () => {
  const page = ownerPage;
  await page.goto(srv.base + '/admin/forget');
  await page.getByLabel('E-mail').fill('HAN@example.org');
  await page.getByRole('button', { name: 'Find the entries' }).click();
  await page.getByRole('heading', { name: '1 entries hold this value' }).waitFor();
  await page.getByRole('button', { name: 'Erase 1 entries' }).click();
  await page.getByRole('heading', { name: 'Erased 1 of 1 entries' }).waitFor();
  await page.goto(`${srv.base}/admin/forms/spring-fair/entries/${ids['Han Meimei']}`);
  await page.getByText('The data of this entry was erased.').waitFor();
  await page.goto(srv.base + '/admin/forms/spring-fair/submissions');
  await page.getByRole('table').waitFor();
});

test('replay: the dry run says what would be restored, and changes nothing', async () => {
  const page = ownerPage;
  await page.goto(srv.base + '/admin/replay');
  await page.getByLabel('form', { exact: true }).selectOption('spring-fair');
  await page.getByRole('button', { name: 'Dry run' }).click();
  await page.getByRole('status').filter({ hasText: 'Finished.' }).waitFor({ timeout: 15000 });
  const table = page.getByRole('table', { name: 'What a run would do' });
  // Eight: the forgotten person's journal copy is gone with the data.
  assert.match(await table.textContent(), /unchanged\s*8/);
  await page.getByRole('button', { name: 'Run the replay' }).waitFor();
});

test('proof: the audit finds nothing missing, and the arrival rate shows a key never received', async () => {
  const now = Date.now();
  // Keys as the SDK makes them (random UUIDs), reported from the hosted
  // page's origin: the server takes arrival reports only from the form's
  // pages, or, without an Origin, only on keys it has.
  const lostKey = crypto.randomUUID();
  const okKey = crypto.randomUUID();
  const events = [
    { key: lostKey, type: 'started', at: now - 5000 },
    { key: okKey, type: 'started', at: now - 4000 },
  ];
  const r = await fetch(`${srv.base}/v1/forms/spring-fair/arrivals`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: srv.base }, body: JSON.stringify({ events }) });
  assert.equal(r.status, 202);
  await submit(srv.base, 'spring-fair', { name: 'Qian Hu', phone: '13100131009' }, { key: okKey });
  const page = ownerPage;
  // Arrival reports are written in batches (a fraction of a second after
  // the 202): load the page again until they show.
  const rate = page.getByText('50.0 % of submissions started on devices reached the server (1 of 2).');
  await waitFor(async () => {
    await page.goto(srv.base + '/admin/forms/spring-fair/proof');
    return (await rate.count()) > 0;
  }, { timeout: 15000, every: 300, what: 'the arrival rate on the proof page' });
  assert.match(await page.getByRole('region', { name: 'Arrival rate' }).textContent(), new RegExp(lostKey));
  await page.getByText(/Arrival reports refused in this window .*: 0\./).waitFor();
  await page.getByRole('button', { name: 'Run the audit' }).click();
  await page.getByText(/9 journal entries, 9 decided, 0 missing\./).waitFor({ timeout: 15000 });
  await page.getByText('Every entry a decision made has its first event.').waitFor();
});

test('deliveries: a failed attempt is retried, and Redeliver sends the event again with its id', async () => {
  const page = ownerPage;
  const b = await submit(srv.base, 'spring-fair', { name: 'Qian Yu', phone: '13000130010', email: 'qian@example.org', tickets: 1 });
  ids['Qian Yu'] = b.id;
  const url = `${srv.base}/admin/forms/spring-fair/entries/${b.id}`;
  // The receiver answers the first attempt 503: the log shows it, and the
  // retry (about 5 s later) delivered.
  const delivery = page.getByRole('region', { name: /→ http:\/\/127\.0\.0\.1/ }).first();
  await waitFor(async () => {
    await page.goto(url);
    // Before the first attempt is recorded the page has no such region:
    // this look gives up quickly so that the poll loads the page again,
    // rather than waiting out the whole deadline on one load.
    const text = await delivery.textContent({ timeout: 2000 }).catch(() => '');
    return /delivered/.test(text) && /failed, to be tried again/.test(text) && /503/.test(text);
  }, { timeout: 20000, every: 500, what: 'the retried delivery in the log' });
  const id = receiver.got.find((x) => x.includes(b.id));
  assert.ok(id, 'the receiver got the entry\'s event');
  const before = receiver.got.filter((x) => x === id).length;
  assert.equal(before, 2, 'one failed attempt, one delivered');
  await delivery.getByRole('button', { name: 'Redeliver' }).click();
  await page.getByRole('status').filter({ hasText: 'The event is being delivered again.' }).waitFor();
  await waitFor(() => receiver.got.filter((x) => x === id).length === before + 1, { what: 'the redelivery, under the same id' });
  await page.goto(srv.base + '/admin/audit');
  assert.match(await page.getByRole('table').textContent(), /event delivered again/);
});

test('a viewer sees no button it may not press', async () => {
  const page = ownerPage;
  await page.goto(srv.base + '/admin/accounts');
  const add = page.getByRole('region', { name: 'Add an account' });
  await add.getByLabel('E-mail').fill('viewer@example.org');
  await add.getByLabel('Role').selectOption('viewer');
  await add.getByLabel('Sites').fill('community');
  await add.getByLabel('Password').fill(password);
  await add.getByRole('button', { name: 'Add the account' }).click();
  await page.getByRole('status').filter({ hasText: 'The account was added.' }).waitFor();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const vp = await ctx.newPage();
  await signIn(vp, 'viewer@example.org');
  await vp.goto(`${srv.base}/admin/forms/spring-fair/entries/${ids['Wang Fang']}`);
  await vp.getByRole('heading', { name: 'Outcome history' }).waitFor();
  for (const name of ['Cancel this entry', 'Mark as spam']) {
    assert.equal(await vp.getByRole('button', { name }).count(), 0, `a viewer sees ${name}`);
  }
  await vp.goto(`${srv.base}/admin/forms/spring-fair`);
  assert.equal(await vp.getByRole('button', { name: 'Close now' }).count(), 0);
  assert.equal(await vp.getByRole('link', { name: 'Edit the definition' }).count(), 0);
  assert.equal(await vp.getByRole('link', { name: 'Forget a person' }).count(), 0);
  await ctx.close();
});

test('an owner of another site cannot reach this form by URL', async () => {
  const r = await fetch(srv.base + '/v1/admin/accounts', {
    method: 'POST', headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: 'other@example.org', role: 'owner', sites: ['elsewhere'], password }),
  });
  assert.equal(r.status, 201, await r.text());
  const ctx = await browser.newContext();
  const op = await ctx.newPage();
  await signIn(op, 'other@example.org');
  assert.equal(await op.getByRole('region', { name: 'Spring fair registration' }).count(), 0);
  for (const path of ['/admin/forms/spring-fair', '/admin/forms/spring-fair/submissions', `/admin/forms/spring-fair/entries/${ids['Wang Fang']}`, '/admin/forms/spring-fair/proof']) {
    const resp = await op.goto(srv.base + path);
    assert.equal(resp.status(), 404, path);
    await op.getByRole('heading', { name: 'Form not found' }).waitFor();
  }
  const api = await op.goto(srv.base + '/v1/admin/forms/spring-fair/export?format=csv');
  assert.equal(api.status(), 404);
  await ctx.close();
});

// Issue 21 items 5 and 8: times in the owner's time zone, named, with UTC
// on hover (the chart's axis too, and a legend for its peak bar); the
// submissions as a card per entry on a 390 px phone.
test('times in the browser\'s time zone with UTC on hover; submissions as cards at 390 px', async () => {
  const state = await owner.storageState();
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, storageState: state, locale: 'en-US', timezoneId: 'Asia/Shanghai' });
  const page = await ctx.newPage();
  try {
    await page.goto(srv.base + '/admin/forms/spring-fair/submissions?lang=zh');
    const first = page.locator('table.entries tbody tr').first().locator('time');
    const at = new Date(/** @type {string} */ (await first.getAttribute('datetime')));
    const local = new Date(at.getTime() + 8 * 3600 * 1000).toISOString().replace('T', ' ').slice(0, 19);
    assert.equal(await first.textContent(), `${local} UTC+08:00`);
    assert.equal(await first.getAttribute('title'), at.toISOString().replace('T', ' ').slice(0, 19) + ' UTC');
    assert.match(await page.locator('.tz-note').textContent() || '', /Asia\/Shanghai, UTC\+08:00/);
    // A card per entry: nothing wider than the phone, when and status on
    // one line, each value named by its column.
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'no sideways scrolling');
    const row = page.locator('table.entries tbody tr').first();
    const [when, status] = [await row.locator('td.when').boundingBox(), await row.locator('td.st').boundingBox()];
    assert.ok(when && status && Math.abs(when.y - status.y) < 4, 'when and status share the first line');
    assert.ok(when && when.width < 390 - 24, 'the time is not cut');
    const named = await row.locator('td[data-label]').first().evaluate((td) => getComputedStyle(td, '::before').content);
    assert.match(named, /姓名/);
    // The chart's axis and caption in the same zone, with a legend.
    await page.goto(srv.base + '/admin/forms?lang=en');
    const card = page.getByRole('region', { name: 'Spring fair registration' });
    assert.match(await card.locator('.axis').textContent() || '', /UTC\+08:00/);
    assert.match(await card.locator('figcaption').textContent() || '', /UTC\+08:00/);
    assert.match(await card.locator('.legend').textContent() || '', /the busiest minute/);
  } finally {
    await ctx.close();
  }
});

test('screenshots, desktop and phone, English and Chinese', { skip: process.env.FORMD_SCREENSHOTS === '0' }, async () => {
  mkdirSync(join(docsDir, 'console'), { recursive: true });
  const shots = [
    ['forms', '/admin/forms'],
    ['submissions', '/admin/forms/spring-fair/submissions'],
    ['entry', `/admin/forms/spring-fair/entries/${ids['Qian Yu']}`],
    ['proof', '/admin/forms/spring-fair/proof'],
    ['account', '/admin/account'],
  ];
  const state = await owner.storageState();
  for (const [width, height, device] of [[1280, 900, 'desktop'], [390, 844, 'phone']]) {
    for (const lang of ['en', 'zh']) {
      const ctx = await browser.newContext({ viewport: { width, height }, storageState: state, locale: lang === 'zh' ? 'zh-CN' : 'en-US', timezoneId: 'Asia/Shanghai' });
      const page = await ctx.newPage();
      for (const [name, path] of shots) {
        await page.goto(`${srv.base}${path}${path.includes('?') ? '&' : '?'}lang=${lang}`);
        await page.screenshot({ path: join(docsDir, 'console', `${name}-${device}-${lang}.png`), fullPage: true });
      }
      await ctx.close();
    }
  }
});
