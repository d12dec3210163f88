// A way back in, in headless Chromium against a real formd: an editor
// changes their password (their other session ends, this one stays), and
// an owner's one-time reset link sets a password once. Elements are found
// by role and accessible name, as a screen reader finds them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setUpOwner, signIn as signInAt, startConsole } from '../harness/harness.js';

const forms = `
id: club-night
site: club
title: Club night
fields:
  - {name: name, type: text, required: true}
`;

const password = 'correct horse battery staple';
let srv, browser, stop;

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }, { owner: false }));
});

after(() => stop?.());

async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US' });
  return ctx.newPage();
}

const signIn = (page, email, pw) => signInAt(page, srv, email, pw);

let owner;

test('the owner sets up and adds an editor', async () => {
  owner = await newPage();
  await setUpOwner(owner, srv);
  await owner.goto(srv.base + '/admin/accounts');
  const add = owner.getByRole('region', { name: 'Add an account' });
  await add.getByLabel('E-mail').fill('ed@example.org');
  await add.getByLabel('Role').selectOption('editor');
  await add.getByLabel('Sites').fill('club');
  await add.getByLabel('Password').fill(password);
  await add.getByRole('button', { name: 'Add the account' }).click();
  await owner.getByRole('status').filter({ hasText: 'The account was added.' }).waitFor();
});

test('an editor changes their password; their other session ends', async () => {
  const ed = await newPage();
  const elsewhere = await newPage();
  await signIn(ed, 'ed@example.org', password);
  await signIn(elsewhere, 'ed@example.org', password);
  await ed.getByRole('link', { name: 'Your account' }).click();
  await ed.getByRole('heading', { name: 'Change your password' }).waitFor();
  await ed.getByLabel('Current password').fill('not the password');
  await ed.getByLabel('New password').fill('a brand new pass phrase');
  await ed.getByRole('button', { name: 'Change password' }).click();
  await ed.getByRole('alert').filter({ hasText: 'the current password is wrong' }).waitFor();
  await ed.getByLabel('Current password').fill(password);
  await ed.getByLabel('New password').fill('a brand new pass phrase');
  await ed.getByRole('button', { name: 'Change password' }).click();
  await ed.getByRole('status').filter({ hasText: 'Your password was changed' }).waitFor();
  // This session stays; the other is sent to the sign-in page.
  await ed.goto(srv.base + '/admin/forms');
  await ed.getByRole('button', { name: 'Sign out' }).waitFor();
  await elsewhere.goto(srv.base + '/admin/forms');
  await elsewhere.getByRole('heading', { name: 'Sign in' }).waitFor();
  await signIn(elsewhere, 'ed@example.org', 'a brand new pass phrase');
  await ed.context().close();
  await elsewhere.context().close();
});

test("an owner's reset link sets the editor's password, once", async () => {
  await owner.goto(srv.base + '/admin/accounts');
  await owner.getByRole('button', { name: 'Make a password reset link for ed@example.org' }).click();
  const shown = owner.getByRole('region', { name: 'Password reset link' });
  await shown.waitFor();
  const link = await shown.getByLabel('Password reset link').inputValue();
  assert.match(link, /\/admin\/reset\?code=/);
  const ed = await newPage();
  await ed.goto(link);
  await ed.getByRole('heading', { name: 'Set your password' }).waitFor();
  assert.match(await ed.locator('main').textContent(), /ed@example\.org/);
  await ed.getByLabel('New password').fill('the reset pass phrase');
  await ed.getByRole('button', { name: 'Set the password' }).click();
  await ed.getByRole('status').filter({ hasText: 'Your password was set.' }).waitFor();
  await signIn(ed, 'ed@example.org', 'the reset pass phrase');
  // The link works once.
  const again = await newPage();
  await again.goto(link);
  await again.getByRole('heading', { name: 'Reset link not valid' }).waitFor();
  await ed.context().close();
  await again.context().close();
});
