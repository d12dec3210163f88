// End-to-end test of pages and conditions (issue 32) in real headless
// Chromium against a real `formd serve`: a three-page application with a
// condition, filled one step at a time, reloaded mid-way (what was typed
// and the step come back), finished and stored once; prefill and hidden
// values from the link.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Formd, withBrowser, startFormd } from '../../../e2e/harness/harness.js';

const yaml = `
id: application
title: Application
fields:
  - {name: name, type: text, required: true, label: Name}
  - {name: age_group, type: select, required: true, options: [adult, minor], label: Age group}
  - {name: guardian_phone, type: phone, region: CN, required: true, label: Guardian's phone, show_if: {field: age_group, equals: minor}}
  - {name: class, type: text, prefill: true, label: Class}
  - {name: essay, type: textarea, required: true, label: Essay}
  - {name: utm_source, type: hidden}
pages:
  - {title: You, fields: [name, age_group, guardian_phone]}
  - {title: School, fields: [class]}
  - {title: Essay, fields: [essay]}
`;

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;

describe('pages and conditions', () => {
  before(async () => {
    ({ srv: server, stop } = await startFormd({ yaml }));
  });
  after(async () => {
    await stop?.();
  });

  test('a three-page form with a condition, reloaded mid-way, is finished and stored once', async () => {
    await withBrowser({ locale: 'en-US' }, async (ctx) => {
      ctx.setDefaultTimeout(20000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      const posts = [];
      page.on('request', (r) => {
        if (r.method() === 'POST' && r.url().includes('/submissions')) posts.push(r);
      });
      await page.goto(server.base + '/f/application?class=3B&utm_source=poster');
      await page.waitForSelector('form[data-formd][data-state]');
      const progress = page.locator('p.progress');
      assert.equal(await progress.textContent(), 'Step 1 of 3: You');
      const guardian = page.getByRole('textbox', { name: "Guardian's phone" });
      assert.equal(await guardian.isVisible(), false, 'the guardian is asked for only for a minor');
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Li Lei');
      await page.getByRole('button', { name: 'Next' }).click();
      assert.equal(await progress.textContent(), 'Step 1 of 3: You', 'Next checks the step: the age group is required');
      await page.getByRole('combobox', { name: 'Age group' }).selectOption('minor');
      assert.equal(await guardian.isVisible(), true);
      await page.getByRole('button', { name: 'Next' }).click();
      assert.equal(await progress.textContent(), 'Step 1 of 3: You', "the guardian's phone is required once shown");
      await guardian.fill('13800138000');
      await page.getByRole('button', { name: 'Next' }).click();
      assert.equal(await progress.textContent(), 'Step 2 of 3: School');
      assert.equal(await page.getByRole('textbox', { name: 'Class' }).inputValue(), '3B', 'prefilled from the link');
      assert.equal(await page.getByRole('button', { name: 'Submit' }).isVisible(), false);

      await page.reload();
      await page.waitForSelector('form[data-formd][data-state]');
      assert.equal(await progress.textContent(), 'Step 2 of 3: School', 'the reload comes back to the step');
      await page.getByRole('button', { name: 'Back' }).click();
      assert.equal(await page.getByRole('textbox', { name: 'Name', exact: true }).inputValue(), 'Li Lei', 'what was typed came back');
      assert.equal(await guardian.inputValue(), '13800138000');
      assert.equal(await guardian.isVisible(), true, 'the condition follows the values brought back');
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('button', { name: 'Next' }).click();
      assert.equal(await progress.textContent(), 'Step 3 of 3: Essay');
      await page.getByRole('textbox', { name: 'Essay' }).fill('Why I would like to come.');
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.waitForSelector('form[data-state="received"]');
      assert.equal(posts.length, 1, 'one POST');
      const entries = await server.entries('application');
      assert.equal(entries.length, 1);
      assert.deepEqual(
        { ...entries[0].data },
        { name: 'Li Lei', age_group: 'minor', guardian_phone: '+8613800138000', class: '3B', essay: 'Why I would like to come.', utm_source: 'poster' },
      );
      assert.equal(await page.evaluate(() => localStorage.length), 0, 'the draft is forgotten once received');
    });
  });

  test("an adult's guardian phone, typed and then hidden, is not sent", async () => {
    await withBrowser({ locale: 'en-US' }, async (ctx) => {
      ctx.setDefaultTimeout(20000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/f/application');
      await page.waitForSelector('form[data-formd][data-state]');
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Han Mei');
      await page.getByRole('combobox', { name: 'Age group' }).selectOption('minor');
      await page.getByRole('textbox', { name: "Guardian's phone" }).fill('13800138001');
      await page.getByRole('combobox', { name: 'Age group' }).selectOption('adult');
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('button', { name: 'Next' }).click();
      await page.getByRole('textbox', { name: 'Essay' }).fill('Hello.');
      await page.getByRole('button', { name: 'Submit' }).click();
      await page.waitForSelector('form[data-state="received"]');
      const e = (await server.entries('application')).find((x) => x.data.name === 'Han Mei');
      assert.ok(e);
      assert.equal(e.data.guardian_phone, undefined);
      assert.equal(e.data._ignored, undefined, 'the page sent nothing for it');
    });
  });
});
