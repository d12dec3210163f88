// The chat robots' editor in the owner's console, in headless Chromium
// against a real formd (issue 36): without JavaScript, a robot of the
// wrong platform is refused on its field with the platform named, a
// DingTalk robot is added with its secret and no personal data by
// default, changed and removed, every control found by its accessible
// name; axe finds nothing on the page in English and in Chinese.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { signedInPage, startConsole } from '../harness/harness.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const forms = `
id: fair
title: {en: Spring fair, zh: 春季市集}
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: phone, type: phone, region: CN, label: {en: Phone, zh: 手机号}}
`;

const dingtalk = 'https://oapi.dingtalk.com/robot/send?access_token=e2e-token-1234';
let srv, browser, stop;

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }));
});

after(() => stop?.());

function signedIn(javaScriptEnabled) {
  return signedInPage(browser, srv, { javaScriptEnabled, bypassCSP: true });
}

test('without JavaScript: a wrong platform refused, a robot added, changed and removed', async () => {
  const { ctx, page } = await signedIn(false);
  await page.goto(srv.base + '/admin/forms/fair');
  await page.getByRole('link', { name: 'Chat robots' }).click();
  await page.getByText('No chat robots yet.').waitFor();

  const add = page.getByRole('form', { name: 'Add a robot' });
  await add.getByLabel('Platform').selectOption({ label: 'Feishu/Lark (飞书)' });
  await add.getByLabel('Robot URL').fill(dingtalk);
  await add.getByRole('button', { name: 'Add and publish' }).click();
  const url = page.getByRole('form', { name: 'Add a robot' }).getByLabel('Robot URL');
  assert.equal(await url.getAttribute('aria-invalid'), 'true');
  const problem = page.getByRole('form', { name: 'Add a robot' }).getByRole('alert');
  assert.match(await problem.innerText(), /is a DingTalk \(钉钉\) robot's URL .* list it under notify\.dingtalk/);

  const again = page.getByRole('form', { name: 'Add a robot' });
  await again.getByLabel('Platform').selectOption({ label: 'DingTalk (钉钉)' });
  await again.getByLabel('Signing secret').fill('SECe2esecret');
  assert.equal(await again.getByRole('checkbox', { name: 'name' }).isChecked(), false, 'no personal data by default');
  await again.getByRole('button', { name: 'Add and publish' }).click();
  await page.getByRole('status').filter({ hasText: 'The robot is added and the form published.' }).waitFor();

  const robot = page.getByRole('form', { name: 'DingTalk (钉钉) 1' });
  await robot.getByRole('checkbox', { name: 'name' }).check();
  await robot.getByRole('button', { name: 'Save and publish' }).click();
  await page.getByRole('status').filter({ hasText: 'The robot is changed and the form published.' }).waitFor();
  // The published definition, as the owner exports it.
  const yaml = await (await page.request.get(srv.base + '/admin/forms/fair/definition.yaml')).text();
  assert.match(yaml, /dingtalk:\n\s+- url: https:\/\/oapi\.dingtalk\.com\/robot\/send\?access_token=e2e-token-1234\n\s+secret: SECe2esecret\n\s+fields: \[name\]/, yaml);

  await page.getByRole('form', { name: 'DingTalk (钉钉) 1' }).getByRole('button', { name: 'Remove this robot' }).click();
  await page.getByRole('status').filter({ hasText: 'The robot is removed and the form published.' }).waitFor();
  await page.getByText('No chat robots yet.').waitFor();
  await ctx.close();
});

test('axe finds nothing on the chat robots page, in English and in Chinese', async () => {
  const { ctx, page } = await signedIn(true);
  await page.goto(srv.base + '/admin/forms/fair/channels');
  const add = page.getByRole('form', { name: 'Add a robot' });
  await add.getByLabel('Platform').selectOption('wecom');
  await add.getByLabel('Robot URL').fill('https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=e2e-key');
  await add.getByRole('button', { name: 'Add and publish' }).click();
  await page.getByRole('status').filter({ hasText: 'The robot is added' }).waitFor();
  const found = [];
  for (const lang of ['en', 'zh']) {
    await page.goto(`${srv.base}/admin/forms/fair/channels?lang=${lang}`);
    await page.addScriptTag({ content: axeSource });
    const result = await page.evaluate(async () => await window.axe.run(document, { resultTypes: ['violations'] }));
    for (const v of result.violations) found.push(`${lang}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }
  await ctx.close();
  assert.deepEqual(found, []);
});
