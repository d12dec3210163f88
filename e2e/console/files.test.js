// The entry page's files in headless Chromium against a real formd: a
// photo sent with coordinates in a plain multipart post shows as a
// thumbnail (an image the browser decoded), every file is a download
// link found by its accessible name, and the downloaded photo no longer
// carries its location (issue 20).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, tempDir, docsDir, startConsole } from '../harness/harness.js';

const forms = `
id: exam
site: school
title: {en: Exam registration, zh: 考试报名}
fields:
  - {name: name, type: text, required: true, label: {en: Name, zh: 姓名}}
  - {name: photo, type: file, required: true, accept: [image/jpeg], label: {en: Photo, zh: 照片}}
  - {name: cv, type: file, accept: [application/pdf], label: {en: CV, zh: 简历}}
`;
const password = 'correct horse battery staple';
const photo = readFileSync(join(repoRoot, 'internal/uploads/exif/testdata/gps-photo.jpg'));

let srv, browser, stop, ctx, page, out;

before(async () => {
  ({ srv, browser, stop } = await startConsole({ yaml: forms }, { owner: false }));
  ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true, locale: 'en-US' });
  page = await ctx.newPage();
  out = tempDir('console-files-');
});

after(async () => {
  await stop?.();
  out?.cleanup();
});

test('photos are thumbnails, files are downloads, and the photo lost its coordinates', async () => {
  await page.goto(srv.setup);
  await page.getByLabel('E-mail').fill('owner@example.org');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create the owner account' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();

  const fd = new FormData();
  fd.append('_key', 'files-1');
  fd.append('name', 'Li Lei');
  fd.append('photo', new Blob([photo], { type: 'image/jpeg' }), 'gps-photo.jpg');
  fd.append('cv', new Blob(['%PDF-1.4\n% a CV\n'], { type: 'application/pdf' }), 'cv.pdf');
  const r = await fetch(`${srv.base}/v1/forms/exam/submissions`, { method: 'POST', body: fd });
  const body = await r.json();
  assert.equal(r.status, 201, JSON.stringify(body));

  await page.goto(`${srv.base}/admin/forms/exam/entries/${body.id}`);
  const files = page.getByRole('region', { name: 'Files' });
  const thumb = files.getByRole('img', { name: 'Photo gps-photo.jpg, sent for Photo' });
  await thumb.waitFor();
  // The browser fetched the signed link and decoded the image, and the
  // orientation was kept: the 96×64 photo (Orientation 6) shows turned
  // upright, 64×96.
  const size = await thumb.evaluate(async (img) => { await img.decode(); return [img.naturalWidth, img.naturalHeight]; });
  assert.deepEqual(size, [64, 96]);
  assert.equal(await files.getByRole('img').count(), 1, 'the PDF has no thumbnail');
  await files.getByRole('link', { name: 'Download cv.pdf' }).waitFor();
  await shot('en');

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    files.getByRole('link', { name: 'Download gps-photo.jpg' }).click(),
  ]);
  assert.equal(download.suggestedFilename(), 'gps-photo.jpg');
  const saved = join(out.dir, 'photo.jpg');
  await download.saveAs(saved);
  const got = readFileSync(saved);
  assert.equal(got.length, photo.length, 'the cleaned photo keeps its length');
  assert.equal(got[0], 0xff);
  assert.equal(got[1], 0xd8);
  for (const s of ['Shanghai', 'GPS', 'ns.adobe.com']) {
    assert.ok(!got.includes(Buffer.from(s)), `the downloaded photo still holds ${s}`);
  }
  assert.ok(photo.includes(Buffer.from('Shanghai')), 'the photo sent had a location');

  // In Chinese too.
  await page.goto(`${srv.base}/admin/forms/exam/entries/${body.id}?lang=zh`);
  await page.getByRole('region', { name: '文件' }).getByRole('link', { name: '下载 cv.pdf' }).waitFor();
  await shot('zh');
});

// shot writes the entry page with its files to docs/console for the
// docs (not with FORMD_SCREENSHOTS=0, as in CI).
async function shot(lang) {
  if (process.env.FORMD_SCREENSHOTS === '0') return;
  mkdirSync(join(docsDir, 'console'), { recursive: true });
  await page.screenshot({ path: join(docsDir, 'console', `entry-files-desktop-${lang}.png`), fullPage: true });
}
