// End-to-end test of drafts on the hosted page (issue 33) in real headless
// Chromium against a real `formd serve`: a draft saved (and "saved" shown
// only after the server's 2xx; a failed save says so and is tried
// again), formd killed with SIGKILL and started again, the draft resumed
// from another browser context and submitted once, stored exactly once,
// with the participant's link on the confirmation; two tabs racing on one
// draft (the older tab's save refused with 412 and shown as "changed in
// another window", never written over the newer one); the page in both
// languages by accessible names and axe-clean; without JavaScript the
// page says drafts need it and still sends, and the result page carries
// the link. Screenshots go to docs/participants/.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Formd, launch, waitFor, docsDir, repoRoot, startFormd } from '../../../e2e/harness/harness.js';

const yaml = `
id: application
title: {en: Summer school application, zh: 暑期学校报名}
drafts: true
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: email, type: email, label: {en: E-mail, zh: 电子邮箱}}
  - {name: session, type: select, required: true, options: [july, august], label: {en: Session, zh: 期次}}
  - {name: essay, type: textarea, required: true, label: {en: 'Why would you like to come?', zh: 您为什么想参加？}}
`;

// axe-core is pinned in e2e/package-lock.json, beside playwright-core.
const axeSource = readFileSync(createRequire(join(repoRoot, 'e2e/package.json')).resolve('axe-core/axe.min.js'), 'utf8');
const shots = join(docsDir, 'participants');
/** A screenshot for docs/participants/ (FORMD_SCREENSHOTS=0: none). @param {import('playwright-core').Page} page @param {string} name */
const shot = (page, name) => (process.env.FORMD_SCREENSHOTS === '0' ? undefined : page.screenshot({ path: join(shots, name), fullPage: true }));

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;
/** @type {import('playwright-core').Browser} */
let browser;

/** @param {import('playwright-core').Page} page */
const draftStatus = (page) => page.locator('[data-formd-draft-status]');

/** The draft's resume link as the page shows it. @param {import('playwright-core').Page} page */
const resumeLink = async (page) => {
  const a = page.locator('[data-formd-draft-link]');
  await a.waitFor({ state: 'visible' });
  // What a person copies: the link's text, the whole URL.
  const text = /** @type {string} */ (await a.textContent());
  assert.equal(text, await a.evaluate((x) => /** @type {HTMLAnchorElement} */ (x).href));
  return text;
};

/** @param {string} lang */
async function newPage(lang = 'en', more = {}) {
  const ctx = await browser.newContext({ locale: lang === 'zh' ? 'zh-CN' : 'en-US', viewport: { width: 420, height: 900 }, ...more });
  ctx.setDefaultTimeout(20000);
  return { ctx, page: await ctx.newPage() };
}

describe('drafts on the hosted page', () => {
  before(async () => {
    // The public URL names this server's own address (known once started).
    ({ srv: server, stop } = await startFormd({ yaml, publicURL: true }));
    browser = await launch();
    mkdirSync(shots, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    await stop?.();
  });

  test('saved only after the 2xx, kept through kill -9, resumed in another context, submitted once', async () => {
    const a = await newPage();
    /** @type {{status: number, at: number}[]} */
    const saves = [];
    a.page.on('response', (r) => {
      if (r.request().method() === 'PUT' && r.url().includes('/drafts/')) saves.push({ status: r.status(), at: Date.now() });
    });
    // The first save never reaches the server: the page says it is not
    // saved, and tries again.
    let cut = true;
    await a.page.route('**/v1/forms/application/drafts/*', (route) => {
      if (cut && route.request().method() === 'PUT') {
        cut = false;
        return route.abort('connectionreset');
      }
      return route.continue();
    });
    await a.page.goto(server.base + '/f/application');
    await a.page.waitForSelector('form[data-formd][data-state]');
    await a.page.getByRole('textbox', { name: 'Name' }).fill('Li Lei');
    await a.page.getByRole('textbox', { name: 'E-mail' }).fill('lilei@example.org');
    await waitFor(async () => (await draftStatus(a.page).getAttribute('data-state')) === 'retrying', { what: 'the failed save said' });
    assert.match(await draftStatus(a.page).textContent(), /not saved/);
    assert.equal(saves.length, 0, 'nothing reached the server yet');
    await waitFor(async () => (await draftStatus(a.page).getAttribute('data-state')) === 'saved', { what: 'the draft saved', timeout: 20000 });
    const shownAt = Date.now();
    assert.ok(saves.some((s) => s.status === 201 && s.at <= shownAt), `"saved" shown after a 2xx: ${JSON.stringify(saves)}`);
    assert.match(await draftStatus(a.page).textContent(), /^Draft saved at /);
    await a.page.getByRole('combobox', { name: 'Session' }).selectOption('august');
    await waitFor(async () => saves.filter((s) => s.status === 200).length >= 1 && (await draftStatus(a.page).getAttribute('data-state')) === 'saved', { what: 'the second save' });
    const link = await resumeLink(a.page);
    assert.match(link, /\/f\/application\?resume=/);
    await shot(a.page, 'draft-saved-en.png');
    await a.ctx.close();

    // A crash: nothing shuts down cleanly. The draft was on disk before
    // "saved" was shown.
    await server.kill();
    await server.start();

    const b = await newPage();
    /** @type {string[]} */
    const posts = [];
    b.page.on('request', (r) => {
      if (r.method() === 'POST' && r.url().includes('/submissions')) posts.push(r.url());
    });
    await b.page.goto(link);
    await waitFor(async () => (await draftStatus(b.page).getAttribute('data-state')) === 'resumed', { what: 'the draft resumed' });
    assert.equal(await b.page.getByRole('textbox', { name: 'Name' }).inputValue(), 'Li Lei');
    assert.equal(await b.page.getByRole('textbox', { name: 'E-mail' }).inputValue(), 'lilei@example.org');
    assert.equal(await b.page.getByRole('combobox', { name: 'Session' }).inputValue(), 'august');
    const key = await b.page.locator('input[name="_key"]').inputValue();
    await b.page.getByRole('textbox', { name: 'Why would you like to come?' }).fill('To learn to sail.');
    await b.page.getByRole('button', { name: 'Submit' }).click();
    await b.page.waitForSelector('form[data-state="received"]');
    const manage = b.page.getByRole('link', { name: 'My registration: see, change or cancel it' });
    await manage.waitFor();
    assert.match(/** @type {string} */ (await manage.getAttribute('href')), /\/e\//);
    await shot(b.page, 'confirmation-en.png');
    assert.equal(posts.length, 1, 'one POST');
    assert.equal(await draftStatus(b.page).textContent(), '', 'no draft state shown once it is sent');
    assert.equal(await b.page.locator('[data-formd-draft-link]').isVisible(), false, 'nor its spent resume link');

    const entries = (await server.entries('application')).filter((e) => e.data.name === 'Li Lei');
    assert.equal(entries.length, 1, 'stored exactly once');
    assert.equal(entries[0].key, key, "under the draft's key");
    assert.deepEqual(entries[0].data, { name: 'Li Lei', email: 'lilei@example.org', session: 'august', essay: 'To learn to sail.' });
    // The decision consumed the draft: its link now says it was sent.
    const token = new URL(link).searchParams.get('resume');
    const r = await fetch(`${server.base}/v1/forms/application/drafts`, { headers: { 'Draft-Token': /** @type {string} */ (token) } });
    assert.ok(r.status === 404 || r.status === 409, `the draft after its submission: ${r.status}`);
    // The participant's link opens the entry.
    await manage.click();
    await b.page.waitForURL(/\/e\//);
    assert.equal(await b.page.getByRole('heading', { name: 'My registration' }).count(), 1);
    await b.ctx.close();
  });

  test('two tabs on one draft: the older tab is refused (412) and says so, never writing over the newer', async () => {
    const r = await fetch(`${server.base}/v1/forms/application/drafts/race-1`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ name: 'Han Mei' }) });
    assert.equal(r.status, 201);
    const { resume } = await r.json();
    const { ctx } = await newPage();
    const one = await ctx.newPage();
    const two = await ctx.newPage();
    for (const p of [one, two]) {
      await p.goto(`${server.base}/f/application?resume=${encodeURIComponent(resume)}`);
      await waitFor(async () => (await draftStatus(p).getAttribute('data-state')) === 'resumed', { what: 'the draft resumed' });
    }
    await one.getByRole('textbox', { name: 'Name' }).fill('Han Meimei');
    await waitFor(async () => (await draftStatus(one).getAttribute('data-state')) === 'saved', { what: "the first tab's save" });
    /** @type {number[]} */
    const answers = [];
    two.on('response', (x) => x.request().method() === 'PUT' && answers.push(x.status()));
    await two.getByRole('textbox', { name: 'Name' }).fill('Han M.');
    await waitFor(async () => (await draftStatus(two).getAttribute('data-state')) === 'conflict', { what: "the second tab's refusal" });
    assert.deepEqual(answers, [412]);
    assert.match(await draftStatus(two).textContent(), /changed in another window/);
    // It stops saving: nothing more is sent from it.
    await two.getByRole('textbox', { name: 'E-mail' }).fill('hm@example.org');
    await two.getByRole('textbox', { name: 'Name' }).press('Tab');
    const d = await fetch(`${server.base}/v1/forms/application/drafts/race-1`, { headers: { 'Draft-Token': resume } });
    assert.equal((await d.json()).data.name, 'Han Meimei', 'the newer save is kept');
    assert.deepEqual(answers, [412], 'no save after the refusal');
    await ctx.close();
  });

  test('both languages: reachable by accessible names, axe-clean', async () => {
    for (const lang of ['en', 'zh']) {
      const { ctx, page } = await newPage(lang, { bypassCSP: true });
      const names = lang === 'en' ? ['Name', 'E-mail', 'Why would you like to come?', 'Submit', 'saved at'] : ['姓名', '电子邮箱', '您为什么想参加？', '提交', '保存'];
      await page.goto(`${server.base}/f/application?lang=${lang}`);
      await page.waitForSelector('form[data-formd][data-state]');
      await page.getByRole('textbox', { name: names[0] }).fill(lang === 'en' ? 'Ann' : '李雷');
      await page.getByRole('textbox', { name: names[1] }).fill('ann@example.org');
      await page.getByRole('textbox', { name: names[2] }).fill('…');
      await waitFor(async () => (await draftStatus(page).getAttribute('data-state')) === 'saved', { what: `the ${lang} draft saved` });
      assert.ok((await draftStatus(page).textContent()).includes(names[4]));
      await page.getByRole('button', { name: names[3] }).waitFor();
      if (lang === 'zh') await shot(page, 'draft-saved-zh.png');
      await page.addScriptTag({ content: axeSource });
      const result = await page.evaluate(async () => await /** @type {any} */ (window).axe.run(document, { resultTypes: ['violations'] }));
      assert.deepEqual(result.violations.map((v) => `${lang}: ${v.id} ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), []);
      await page.getByRole('combobox', { name: lang === 'en' ? 'Session' : '期次' }).selectOption('july');
      await page.getByRole('button', { name: names[3] }).click();
      await page.waitForSelector('form[data-state="received"]');
      await page.getByRole('link', { name: lang === 'en' ? 'My registration: see, change or cancel it' : '我的报名：查看、修改或取消' }).waitFor();
      const axe2 = await page.evaluate(async () => await /** @type {any} */ (window).axe.run(document, { resultTypes: ['violations'] }));
      assert.deepEqual(axe2.violations.map((v) => `${lang} confirmation: ${v.id}`), []);
      await ctx.close();
    }
  });

  test('without JavaScript: the page says drafts need it, still sends, and the result page carries the link', async () => {
    for (const lang of ['en', 'zh']) {
      const { ctx, page } = await newPage(lang, { javaScriptEnabled: false });
      await page.goto(`${server.base}/f/application?lang=${lang}`);
      // (Chromium with scripts switched off by the test still parses
      // <noscript> as a scripting browser would: its text is read from it.)
      assert.ok((await page.locator('noscript').textContent())?.includes(lang === 'en' ? 'Saving a draft needs JavaScript' : '保存草稿需要 JavaScript'));
      await page.getByRole('textbox', { name: lang === 'en' ? 'Name' : '姓名' }).fill(lang === 'en' ? 'Plain Ann' : '王芳');
      await page.getByRole('combobox', { name: lang === 'en' ? 'Session' : '期次' }).selectOption('july');
      await page.getByRole('textbox', { name: lang === 'en' ? 'Why would you like to come?' : '您为什么想参加？' }).fill('No scripts here.');
      await page.getByRole('button', { name: lang === 'en' ? 'Submit' : '提交' }).click();
      await page.waitForURL(/\/done\?/);
      const link = page.getByRole('link', { name: lang === 'en' ? 'My registration: see, change or cancel it' : '我的报名：查看、修改或取消' });
      assert.ok((await link.getAttribute('href'))?.startsWith(server.base + '/e/'), 'built from --public-url');
      await shot(page, `confirmation-plain-${lang}.png`);
      await link.click();
      assert.equal(await page.getByRole('heading', { name: lang === 'en' ? 'My registration' : '我的报名' }).count(), 1);
      await ctx.close();
    }
  });
});
