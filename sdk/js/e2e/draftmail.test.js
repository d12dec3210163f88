// End-to-end test of "E-mail me this link" (issue 33) in real headless
// Chromium against a real `formd serve --smtp`, with a small SMTP server
// here that keeps what it accepts and refuses one mailbox (550): the
// button found by its accessible name in both languages, "sent" shown
// only once the message was accepted, the mailed link opening the draft
// in another browser context; an ask without an address and an address
// the mail server refuses each say so, and nothing says "sent". Axe-clean.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Formd, launch, waitFor, repoRoot, startFormd } from '../../../e2e/harness/harness.js';

const yaml = `
id: application
title: {en: Summer school application, zh: 暑期学校报名}
drafts: true
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: email, type: email, label: {en: E-mail, zh: 电子邮箱}}
`;

const axeSource = readFileSync(createRequire(join(repoRoot, 'e2e/package.json')).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * A small SMTP server (RFC 5321's plain dialogue, no TLS, no AUTH) on
 * 127.0.0.1 that keeps each accepted message's recipients and text.
 * @param {string} refuse a mailbox answered 550
 */
function smtpServer(refuse) {
  /** @type {{to: string[], data: string}[]} */
  const got = [];
  const srv = createServer((sock) => {
    sock.setEncoding('utf8');
    let buf = '';
    let inData = false;
    let data = '';
    /** @type {string[]} */
    let to = [];
    const say = (/** @type {string} */ s) => sock.write(s + '\r\n');
    say('220 localhost ESMTP test');
    sock.on('data', (chunk) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (inData) {
          if (line === '.') {
            inData = false;
            got.push({ to, data });
            to = [];
            data = '';
            say('250 2.0.0 accepted');
          } else data += (line.startsWith('..') ? line.slice(1) : line) + '\n';
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') say('250-localhost\r\n250 8BITMIME');
        else if (verb === 'HELO' || verb === 'MAIL' || verb === 'NOOP') say('250 2.0.0 ok');
        else if (verb === 'RSET') {
          to = [];
          say('250 2.0.0 ok');
        } else if (verb === 'RCPT') {
          const addr = (/<([^>]*)>/.exec(line) || [])[1] || '';
          if (addr === refuse) say('550 5.1.1 no such mailbox');
          else {
            to.push(addr);
            say('250 2.1.5 ok');
          }
        } else if (verb === 'DATA') {
          inData = true;
          say('354 go ahead');
        } else if (verb === 'QUIT') {
          say('221 bye');
          sock.end();
        } else say('502 5.5.2 not implemented');
      }
    });
    sock.on('error', () => {});
  });
  return new Promise((res) => srv.listen(0, '127.0.0.1', () => res({ got, port: /** @type {any} */ (srv.address()).port, close: () => srv.close() })));
}

/** Quoted-printable undone (soft breaks and =XX), for reading the link. @param {string} s */
const unQP = (s) => s.replace(/=\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;
/** @type {import('playwright-core').Browser} */
let browser;
/** @type {any} */
let smtp;

describe('the resume link by e-mail on the hosted page', () => {
  before(async () => {
    smtp = await smtpServer('nobody@example.org');
    const mail = ['--smtp', `smtp://127.0.0.1:${smtp.port}`, '--smtp-from', 'formd@example.org'];
    ({ srv: server, stop } = await startFormd({ yaml, args: mail, publicURL: true }));
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await stop?.();
    smtp?.close();
  });

  /** @param {string} lang @param {object} [more] */
  const newPage = async (lang, more = {}) => {
    const ctx = await browser.newContext({ locale: lang === 'zh' ? 'zh-CN' : 'en-US', ...more });
    ctx.setDefaultTimeout(20000);
    return { ctx, page: await ctx.newPage() };
  };
  /** @param {import('playwright-core').Page} page */
  const saved = (page) => waitFor(async () => (await page.locator('[data-formd-draft-status]').getAttribute('data-state')) === 'saved', { what: 'the draft saved' });

  for (const [lang, t] of /** @type {const} */ ([
    ['en', { name: 'Name', email: 'E-mail', button: 'E-mail me this link', sent: 'The link was sent to the address in this form.', subject: 'Summer school application' }],
    ['zh', { name: '姓名', email: '电子邮箱', button: '将此链接发到我的邮箱', sent: '链接已发送到表单中填写的邮箱。', subject: '暑期学校报名' }],
  ])) {
    test(`${lang}: the link is e-mailed, "sent" shown after the server took it, and the mailed link opens the draft`, async () => {
      const before = smtp.got.length;
      // bypassCSP: only so that axe's script can be added.
      const { ctx, page } = await newPage(lang, { bypassCSP: true });
      await page.goto(server.base + '/f/application');
      await page.waitForSelector('form[data-formd][data-state]');
      const addr = `li.${lang}@example.org`;
      await page.getByRole('textbox', { name: t.name }).fill('Li Lei ' + lang);
      await page.getByRole('textbox', { name: t.email }).fill(addr);
      await saved(page);
      await page.getByRole('button', { name: t.button }).click();
      const status = page.locator('[data-formd-draft-mail-status]');
      await waitFor(async () => (await status.textContent()) === t.sent, { what: 'sent said' });
      assert.equal(smtp.got.length, before + 1, 'one message accepted before "sent" was shown');
      const m = smtp.got.at(-1);
      assert.deepEqual(m.to, [addr]);
      const text = unQP(m.data);
      const link = (new RegExp(server.base.replace(/[.]/g, '\\.') + '/f/application\\?resume=[A-Za-z0-9_-]+').exec(text) || [])[0];
      assert.ok(link, `the message carries the resume link:\n${text}`);
      assert.equal(link, await page.locator('[data-formd-draft-link]').textContent(), 'the link mailed is the one shown');
      await page.addScriptTag({ content: axeSource });
      const axe = await page.evaluate(async () => await /** @type {any} */ (window).axe.run(document, { resultTypes: ['violations'] }));
      assert.deepEqual(axe.violations.map((v) => `${lang}: ${v.id} ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), []);
      await ctx.close();

      // The mailed link, opened on "another device".
      const other = await newPage(lang);
      await other.page.goto(link);
      await waitFor(async () => (await other.page.getByRole('textbox', { name: t.name }).inputValue()) === 'Li Lei ' + lang, { what: 'the draft opened from the mailed link' });
      await other.ctx.close();
    });
  }

  test('no address typed, or one the mail server refuses: each said, nothing said sent', async () => {
    const { ctx, page } = await newPage('en');
    await page.goto(server.base + '/f/application');
    await page.waitForSelector('form[data-formd][data-state]');
    const status = page.locator('[data-formd-draft-mail-status]');
    await page.getByRole('textbox', { name: 'Name' }).fill('Han Meimei');
    await saved(page);
    const before = smtp.got.length;
    await page.getByRole('button', { name: 'E-mail me this link' }).click();
    await waitFor(async () => (await status.textContent()) === 'Type your e-mail address in this form first; then ask again.', { what: 'no address said' });
    await page.getByRole('textbox', { name: 'E-mail' }).fill('nobody@example.org');
    // Pressed at once: the page saves the address first, then asks.
    await page.getByRole('button', { name: 'E-mail me this link' }).click();
    await waitFor(async () => (await status.textContent()) === 'The link could not be e-mailed: keep the link above.', { what: 'the refusal said' });
    assert.equal(smtp.got.length, before, 'no message accepted');
    await ctx.close();
  });
});
