// Two door pages at two formd instances over NATS JetStream and
// PostgreSQL (issue 35): two volunteers scan the same ticket at the same
// moment, each at their own door and their own instance. The server
// decides the ticket's first check-in once across instances: one page
// says "Checked in", the other "Already checked in … at door <the
// other>", and the roster names the one door. Run when
// FORMD_TEST_POSTGRES_URL and FORMD_TEST_NATS_URL are set (.ci/run sets
// them; FORMD_REQUIRE_SERVICES=1 makes their absence a failure).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Formd, formdBinary, freePort, launch, setUpOwner, signedInPage, submit, tempDir, waitFor } from '../harness/harness.js';

const pgURL = process.env.FORMD_TEST_POSTGRES_URL;
const natsURL = process.env.FORMD_TEST_NATS_URL;
const missing = !pgURL || !natsURL;
if (missing && process.env.FORMD_REQUIRE_SERVICES === '1') {
  throw new Error('FORMD_REQUIRE_SERVICES=1 and FORMD_TEST_POSTGRES_URL or FORMD_TEST_NATS_URL is not set');
}
const skip = missing && 'set FORMD_TEST_POSTGRES_URL and FORMD_TEST_NATS_URL to run the two-instance door test';

const forms = `
id: hall
title: {en: Spring fair, zh: 春季集市}
checkin: true
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: session, type: select, options: [morning, afternoon], label: {en: Session, zh: 场次}}
`;
const suffix = randomBytes(6).toString('hex');
const schema = `formd_e2e_doors_${suffix}`;
let bin, tmp, a, b, browser;

function psql(sql) {
  execFileSync('psql', ['-q', '-v', 'ON_ERROR_STOP=1', pgURL, '-c', sql], { env: { ...process.env, PGOPTIONS: '--client-min-messages=warning' } });
}

before(async () => {
  if (skip) return;
  psql(`CREATE SCHEMA ${schema}`);
  bin = formdBinary();
  tmp = tempDir('formd-doors-');
  const formsFile = join(tmp.dir, 'forms.yaml');
  writeFileSync(formsFile, forms);
  const store = pgURL + (pgURL.includes('?') ? '&' : '?') + `search_path=${schema}`;
  const shared = ['--store', store, '--journal', natsURL, '--nats-stream', `DOORS_${suffix}`, '--forms-refresh', '200ms', '--reconcile-every', '1s'];
  // Each its own metrics address: the default one can be held by only one.
  a = new Formd(bin.bin, { dataDir: join(tmp.dir, 'a'), port: await freePort(), forms: formsFile, args: [...shared, '--metrics-addr', `127.0.0.1:${await freePort()}`] });
  await a.start();
  // The second instance shares the store: its banner says a token was
  // issued before, and the first's token is good on both.
  b = new Formd(bin.bin, { dataDir: join(tmp.dir, 'b'), port: await freePort(), forms: formsFile, args: [...shared, '--metrics-addr', `127.0.0.1:${await freePort()}`] });
  b.token = a.token;
  await b.start();
  browser = await launch();
  const ctx = await browser.newContext({ locale: 'en-US' });
  await setUpOwner(await ctx.newPage(), a);
  await ctx.close();
});

after(async () => {
  await browser?.close();
  await a?.stop();
  await b?.stop();
  tmp?.cleanup();
  bin?.cleanup();
  if (!skip) psql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
});

/** A signed-in door page of instance srv, at door name. */
async function door(srv, name) {
  const { ctx, page } = await signedInPage(browser, srv, { viewport: { width: 390, height: 844 } });
  await page.goto(srv.base + '/admin/forms/hall/door');
  await page.getByText(/^0 scans waiting to be sent$/).waitFor();
  await page.getByLabel('Door', { exact: true }).fill(name);
  return { ctx, page };
}

async function roster(srv) {
  const r = await fetch(`${srv.base}/v1/admin/forms/hall/checkins`, { headers: { Authorization: `Bearer ${srv.token}` } });
  const body = await r.text();
  assert.equal(r.status, 200, body);
  return JSON.parse(body);
}

test('two door pages at two instances scan the same ticket at once: one checks in, the other says already', { skip }, async () => {
  const people = [['Ann', 'morning'], ['Bo', 'afternoon'], ['Cy', 'morning']];
  // Registered at one instance, each on the other's roster.
  for (const [i, [name, session]] of people.entries()) await submit((i % 2 ? b : a).base, 'hall', { name, session });
  let ro;
  await waitFor(async () => (ro = await roster(b)).tickets.length === people.length, { what: 'three tickets on the roster', timeout: 20000 });
  const t = Object.fromEntries(ro.tickets.map((x) => [x.name, x]));

  const east = await door(a, 'East');
  const west = await door(b, 'West');
  for (const [name, session] of people) {
    // The same code typed at both doors, the buttons pressed together.
    await east.page.getByLabel('Ticket or short code').fill(t[name].code);
    await west.page.getByLabel('Ticket or short code').fill(t[name].code);
    await Promise.all([east, west].map((d) => d.page.getByRole('button', { name: 'Check in' }).click()));
    const said = {};
    for (const [where, d] of [['East', east], ['West', west]]) {
      // The page answers at once from its roster ("not yet confirmed"),
      // then with the server's decision once the scan is sent: wait for
      // this scan's line to carry the decision.
      const recent = d.page.getByRole('region', { name: 'Recent scans' }).getByRole('listitem');
      await waitFor(
        async () => {
          const first = (await recent.allTextContents())[0] || '';
          return first.includes(t[name].code) && !/Not yet confirmed/.test(first) && (said[where] = first);
        },
        { timeout: 20000, what: `${where}'s decided answer for ${name}` },
      );
      await d.page.getByText(/^0 scans waiting to be sent$/).waitFor({ timeout: 20000 });
    }
    const first = Object.keys(said).filter((w) => new RegExp(`Checked in — ${name}, ${session}$`).test(said[w]));
    const second = Object.keys(said).filter((w) => new RegExp(`Already checked in at \\d\\d:\\d\\d at door (East|West) — ${name}, ${session}$`).test(said[w]));
    assert.equal(first.length, 1, `${name}: ${JSON.stringify(said)}`);
    assert.equal(second.length, 1, `${name}: ${JSON.stringify(said)}`);
    assert.notEqual(first[0], second[0]);
    assert.match(said[second[0]], new RegExp(`at door ${first[0]} —`), `${name}: the second door names the first`);
    const now = Object.fromEntries((await roster(a)).tickets.map((x) => [x.name, x]));
    assert.equal(now[name].door, first[0], `${name}: the roster names the door that checked in first`);
  }
  const both = await Promise.all([roster(a), roster(b)]);
  assert.deepEqual(both.map((r) => r.checked_in), [3, 3]);
  await east.ctx.close();
  await west.ctx.close();
});
