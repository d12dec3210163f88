// The door page's script (issue 35), in headless Chromium against a real
// formd, with the console's Content-Security-Policy in force: scans typed
// while the page is offline are kept in its IndexedDB outbox and
// answered from the downloaded roster, marked "not yet confirmed"; once
// online they are sent, each with its own idempotency key: each first
// check-in is decided once, a duplicate (and a ticket another door
// checked in meanwhile) is shown as already checked in, and the waiting
// count goes to 0. With Chromium's fake camera playing a video of a
// real ticket's QR code, "Use the camera" checks the ticket in. Scans
// that wait while formd is killed (-9) are sent once it is back; fifty
// scans made offline are each answered, the first of each ticket once. axe finds nothing on the door page at 390 px, in
// English and in Chinese.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromiumArgs, docsDir, launch, repoRoot, signedInPage, signIn, submit, tempDir, waitFor, startConsole } from '../harness/harness.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const forms = `
id: gala
title: {en: Autumn gala, zh: 秋季晚会}
checkin: true
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: session, type: select, options: [morning, afternoon], label: {en: Session, zh: 场次}}
`;

let srv, browser, stop;
const tickets = {}; // name → {ticket, code}

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }));
  for (const [name, session] of [['Ann', 'morning'], ['Bo', 'afternoon'], ['Cy', 'morning']]) await submit(srv.base, 'gala', { name, session });
  await waitFor(async () => (await roster()).tickets.length === 3, { what: 'three tickets on the roster' });
  for (const t of (await roster()).tickets) tickets[t.name] = t;
});

after(() => stop?.());

async function roster() {
  const r = await fetch(`${srv.base}/v1/admin/forms/gala/checkins`, { headers: { Authorization: `Bearer ${srv.token}` } });
  const body = await r.text();
  assert.equal(r.status, 200, body);
  return JSON.parse(body);
}

/** The door page's outbox, as it is in its IndexedDB. */
function storedScans(page) {
  return page.evaluate(
    () =>
      new Promise((res, rej) => {
        const rq = indexedDB.open('formd-door');
        rq.onerror = () => rej(rq.error);
        rq.onsuccess = () => {
          const g = rq.result.transaction('scans').objectStore('scans').getAll();
          g.onsuccess = () =>
            res(g.result.map((s) => ({ key: s.key, seq: s.seq, tries: s.tries, answered: !!s.answer, result: s.answer?.result, name: s.answer?.name })));
        };
      }),
  );
}

function signedIn(opts = {}) {
  return signedInPage(browser, srv, { viewport: { width: 390, height: 844 }, ...opts });
}

test('offline scans wait in the outbox, are answered from the roster, then decided once online', async () => {
  const { ctx, page } = await signedIn();
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && !/ERR_INTERNET_DISCONNECTED|Failed to load resource/.test(m.text()) && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(srv.base + '/admin/forms/gala/door');
  const waiting = page.getByText(/scans? waiting to be sent/);
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor();
  await page.getByLabel('Door', { exact: true }).fill('A');
  const code = page.getByLabel('Ticket or short code');
  const check = page.getByRole('button', { name: 'Check in' });
  const answer = page.locator('[data-door-live]');

  await ctx.setOffline(true);
  await code.fill(tickets.Ann.code.toLowerCase()); // typed as a person would
  await check.click();
  await answer.filter({ hasText: 'Valid ticket — Ann, morning' }).waitFor();
  assert.match(await answer.textContent(), /Not yet confirmed/);
  await code.fill(tickets.Ann.code);
  await check.click();
  await answer.filter({ hasText: 'Already checked in, per the roster — Ann, morning' }).waitFor();
  await code.fill(tickets.Bo.code);
  await check.click();
  await code.fill(tickets.Cy.ticket); // a whole ticket, as a scanner types it
  await check.click();
  await code.fill('ZZZZZ-ZZZZZ');
  await check.click();
  await answer.filter({ hasText: 'Not on the downloaded roster' }).waitFor();
  await waiting.filter({ hasText: /^5 scans waiting to be sent$/ }).waitFor();
  if (process.env.FORMD_SCREENSHOTS === '1') {
    await page.screenshot({ path: join(docsDir, 'checkin', 'door-offline.png'), fullPage: true });
  }

  // Meanwhile door B, online, lets Bo in: the page's offline scan of Bo
  // is the second one.
  const b = await fetch(`${srv.base}/v1/admin/forms/gala/checkins`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${srv.token}`, 'Idempotency-Key': 'door-b-1', 'Content-Type': 'application/json' },
    body: JSON.stringify({ ticket: tickets.Bo.ticket, door: 'B' }),
  });
  const bBody = await b.text();
  assert.equal(b.status, 201, bBody);
  assert.equal((await roster()).checked_in, 1, 'nothing of the offline page reached the server');

  // A reload while offline would lose nothing: the scans are in IndexedDB.
  const stored = await storedScans(page);
  assert.equal(stored.length, 5);
  assert.equal(new Set(stored.map((s) => s.key)).size, 5, 'each scan has its own key');
  assert.ok(stored.every((s) => !s.answered));

  await ctx.setOffline(false);
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor({ timeout: 20000 });
  const recent = page.getByRole('region', { name: 'Recent scans' }).getByRole('listitem');
  const lines = await recent.allTextContents();
  assert.equal(lines.length, 5, lines.join('\n'));
  // Newest first.
  assert.match(lines[0], /ZZZZZ-ZZZZZ · Not valid: no ticket of this event has this code$/);
  assert.match(lines[1], /Checked in — Cy, morning$/);
  assert.match(lines[2], /Already checked in at \d\d:\d\d at door B — Bo, afternoon$/);
  assert.match(lines[3], /Already checked in at \d\d:\d\d at door A — Ann, morning$/);
  assert.match(lines[4], /Checked in — Ann, morning$/);
  assert.ok(lines.every((l) => !/Not yet confirmed/.test(l)), lines.join('\n'));

  const ro = await roster();
  assert.equal(ro.checked_in, 3);
  const by = Object.fromEntries(ro.tickets.map((t) => [t.name, t.door]));
  assert.deepEqual(by, { Ann: 'A', Bo: 'B', Cy: 'A' });
  await page.getByText('3 of 3 checked in').first().waitFor();
  const byOption = page.getByRole('table', { name: 'Checked in by option' });
  assert.equal(await byOption.getByRole('row', { name: /^morning/ }).getByRole('cell').nth(1).textContent(), '2 of 2 checked in');
  assert.equal(await byOption.getByRole('row', { name: /^afternoon/ }).getByRole('cell').nth(1).textContent(), '1 of 1 checked in');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('formd killed -9 while scans wait: they are sent when it is back, each decided once', async () => {
  for (const [name, session] of [['Eve', 'morning'], ['Fay', 'afternoon']]) await submit(srv.base, 'gala', { name, session });
  let ro;
  await waitFor(async () => (ro = await roster()).tickets.some((t) => t.name === 'Fay'), { what: "Fay's ticket" });
  const t = Object.fromEntries(ro.tickets.map((x) => [x.name, x]));
  const { ctx, page } = await signedIn();
  await page.goto(srv.base + '/admin/forms/gala/door');
  const waiting = page.getByText(/scans? waiting to be sent/);
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor();
  await page.getByLabel('Door', { exact: true }).fill('K');
  await ctx.setOffline(true);
  for (const who of ['Eve', 'Fay', 'Eve']) {
    await page.getByLabel('Ticket or short code').fill(t[who].code);
    await page.getByRole('button', { name: 'Check in' }).click();
  }
  await waiting.filter({ hasText: /^3 scans waiting to be sent$/ }).waitFor();
  await srv.kill();
  await ctx.setOffline(false); // the network is back, formd is not: the sends fail and are retried
  // Wait until a send has failed and been put off (the page's backoff).
  await waitFor(async () => (await storedScans(page)).some((x) => x.tries > 0), { what: 'a failed send, put off' });
  assert.match(await waiting.textContent(), /^3 scans waiting to be sent$/);
  await srv.start();
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor({ timeout: 30000 });
  const lines = await page.getByRole('region', { name: 'Recent scans' }).getByRole('listitem').allTextContents();
  assert.match(lines[0], /Already checked in at \d\d:\d\d at door K — Eve, morning$/);
  assert.match(lines[1], /Checked in — Fay, afternoon$/);
  assert.match(lines[2], /Checked in — Eve, morning$/);
  const after = Object.fromEntries((await roster()).tickets.map((x) => [x.name, x]));
  assert.equal(after.Eve.door, 'K');
  assert.equal(after.Fay.door, 'K');
  await ctx.close();
});

test('fifty scans offline, then online: every first check-in decided once, every duplicate shown', async () => {
  const names = Array.from({ length: 20 }, (_, i) => `P${String(i + 1).padStart(2, '0')}`);
  for (const name of names) await submit(srv.base, 'gala', { name, session: 'afternoon' });
  let ro;
  await waitFor(async () => (ro = await roster()).tickets.filter((x) => names.includes(x.name)).length === 20, { what: 'twenty tickets' });
  const t = Object.fromEntries(ro.tickets.map((x) => [x.name, x]));
  const { ctx, page } = await signedIn();
  await page.goto(srv.base + '/admin/forms/gala/door');
  const waiting = page.getByText(/scans? waiting to be sent/);
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor();
  await page.getByLabel('Door', { exact: true }).fill('F');
  await ctx.setOffline(true);
  const code = page.getByLabel('Ticket or short code');
  const check = page.getByRole('button', { name: 'Check in' });
  // Every ticket once, then thirty second scans: fifty in all.
  const order = [...names, ...names, ...names.slice(0, 10)];
  for (const n of order) {
    await code.fill(t[n].code);
    await check.click();
  }
  await waiting.filter({ hasText: /^50 scans waiting to be sent$/ }).waitFor();
  await ctx.setOffline(false);
  await waiting.filter({ hasText: /^0 scans waiting to be sent$/ }).waitFor({ timeout: 60000 });
  const scans = await storedScans(page);
  const mine = scans.filter((x) => names.includes(x.name)).sort((a, b) => a.seq - b.seq);
  assert.equal(mine.length, 50);
  assert.deepEqual(mine.map((x) => x.name), order);
  assert.deepEqual(mine.map((x) => x.result), [...names.map(() => 'checked_in'), ...order.slice(20).map(() => 'already_checked_in')]);
  const after = (await roster()).tickets.filter((x) => names.includes(x.name));
  assert.ok(after.every((x) => x.checked_in_at && x.door === 'F'));
  const shown = await page.getByRole('region', { name: 'Recent scans' }).getByRole('listitem').allTextContents();
  assert.ok(shown.length > 0 && shown.every((l) => /Already checked in at \d\d:\d\d at door F — P\d\d, afternoon$/.test(l)), shown.join('\n'));
  await ctx.close();
});

test('the camera: a fake camera shows a ticket\'s QR code, and the page checks it in', async () => {
  await submit(srv.base, 'gala', { name: 'Dee', session: 'afternoon' });
  let dee;
  await waitFor(async () => (dee = (await roster()).tickets.find((t) => t.name === 'Dee')), { what: "Dee's ticket" });
  // The video is made by the Go side from the ticket's QR code as the
  // participant's page shows it (internal/ticket).
  const tmp = tempDir('formd-door-video-');
  const video = join(tmp.dir, 'ticket.y4m');
  execFileSync('go', ['run', './e2e/console/qrvideo', dee.ticket, video], { cwd: repoRoot, stdio: 'inherit' });
  const cam = await launch({
    args: [...chromiumArgs, '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${video}`],
  });
  try {
    const ctx = await cam.newContext({ locale: 'en-US', viewport: { width: 390, height: 844 } });
    await ctx.grantPermissions(['camera'], { origin: srv.base });
    const page = await ctx.newPage();
    await signIn(page, srv);
    await page.goto(srv.base + '/admin/forms/gala/door');
    await page.getByText('0 scans waiting to be sent', { exact: true }).waitFor();
    await page.getByLabel('Door', { exact: true }).fill('C');
    await page.getByRole('button', { name: 'Use the camera' }).click();
    await page.getByRole('button', { name: 'Stop the camera' }).waitFor();
    await page.locator('[data-door-live]').filter({ hasText: 'Checked in — Dee, afternoon' }).waitFor({ timeout: 20000 });
    await page.getByRole('button', { name: 'Stop the camera' }).click();
    await page.getByRole('button', { name: 'Use the camera' }).waitFor();
    const lines = await page.getByRole('region', { name: 'Recent scans' }).getByRole('listitem').allTextContents();
    assert.equal(lines.length, 1, 'the ticket held before the camera is one scan: ' + lines.join('\n'));
    const d = (await roster()).tickets.find((t) => t.name === 'Dee');
    assert.equal(d.door, 'C');
    assert.ok(d.checked_in_at);
    await ctx.close();
  } finally {
    await cam.close();
    tmp.cleanup();
  }
});

test('axe finds nothing on the door page at 390 px, in English and in Chinese', async () => {
  const { ctx, page } = await signedIn({ bypassCSP: true });
  const found = [];
  for (const lang of ['en', 'zh']) {
    await page.goto(`${srv.base}/admin/forms/gala/door?lang=${lang}`);
    await page.getByText(/scans? waiting to be sent|次扫码等待发送/).waitFor();
    if (lang === 'en') {
      // An answer and the list of recent scans on the page too.
      await page.getByLabel('Door', { exact: true }).fill('A');
      await page.getByLabel('Ticket or short code').fill(tickets.Ann.code);
      await page.getByRole('button', { name: 'Check in' }).click();
      await page.locator('[data-door-live]').filter({ hasText: 'Already checked in at' }).waitFor();
    }
    await page.locator('[data-door-recent]:not([hidden])').waitFor();
    await page.addScriptTag({ content: axeSource });
    const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
    for (const v of result.violations) found.push(`${lang}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  await ctx.close();
  assert.deepEqual(found, []);
});
