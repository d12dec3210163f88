// End-to-end tests of file uploads (issue 20) in real headless Chromium
// against a real `formd serve`: the hosted page without JavaScript posting
// multipart, and the SDK on a page of another origin uploading a 5 MiB
// photo over tus through a recording proxy (what reached formd: methods,
// offsets, bytes) while the network drops halfway, while the page is
// reloaded, and while the browser is closed. "Received once" and the bytes' SHA-256 are checked through
// the admin export; the fields are found by their accessible names.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Formd, withBrowser, waitFor, recordingProxy, tempDir, startFormd } from '../../../e2e/harness/harness.js';

const MiB = 1 << 20;

/** @type {Formd} */
let server;
/** @type {() => Promise<void>} */
let stop;

before(async () => {
  ({ srv: server, stop } = await startFormd());
});

after(async () => {
  await stop?.();
});

/** size bytes that sniff as a JPEG (SOI and a JFIF APP0 segment), the rest random. */
function jpeg(size) {
  const b = randomBytes(size);
  Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]).copy(b);
  return b;
}
const sha = (b) => createHash('sha256').update(b).digest('hex');

/** The photo form's entries whose name is this one. */
async function entriesNamed(name) {
  return (await server.entries('photo')).filter((e) => e.data && e.data.name === name);
}

/** The file metadata an export gives for an entry's photo. */
function photoOf(entry) {
  const p = entry.data.photo;
  return Array.isArray(p) ? p : [p];
}

let seq = 0;
const person = () => `Zhang Wei ${++seq}`;

describe('uploads in Chromium', () => {
  test('the hosted page without JavaScript posts the photo as multipart: received once, the same bytes', async () => {
    const bytes = jpeg(300 * 1024);
    const name = person();
    await withBrowser({ javaScriptEnabled: false }, async (ctx) => {
      ctx.setDefaultTimeout(15000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(server.base + '/f/photo');
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill(name);
      await page.getByLabel('Photo').setInputFiles({ name: 'me.jpg', mimeType: 'image/jpeg', buffer: bytes });
      await page.getByRole('button', { name: 'Submit' }).click();
      await waitFor(() => /\/f\/photo\/done\?key=/.test(page.url()), { what: 'the result page' });
      await page.waitForSelector('[data-status=stored]');
      assert.equal(await page.getByRole('status').textContent(), 'Received. Thank you!');
    });
    const all = await entriesNamed(name);
    assert.equal(all.length, 1, 'received once');
    const [f] = photoOf(all[0]);
    assert.equal(f.sha256, sha(bytes));
    assert.equal(f.size, bytes.length);
    assert.equal(f.type, 'image/jpeg');
    assert.equal(f.name, 'me.jpg');
  });

  describe('the SDK on a page of another origin', () => {
    /** @type {Awaited<ReturnType<typeof recordingProxy>>} */
    let proxy;
    /** @type {import('node:http').Server} */
    let site;
    let origin = '';

    before(async () => {
      proxy = await recordingProxy(server.base);
      const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Exam</title>
<script type="module" src="${proxy.base}/sdk/formd.js"></script></head><body>
<form data-formd="photo" method="post" enctype="multipart/form-data" action="${proxy.base}/v1/forms/photo/submissions">
<label for="n">Name</label><input id="n" name="name" required>
<label for="p">Photo</label><input id="p" name="photo" type="file" accept="image/jpeg,image/png" required>
<button>Register</button></form></body></html>`;
      site = createServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
        res.end(html);
      });
      await new Promise((r) => site.listen(0, '127.0.0.1', () => r(undefined)));
      origin = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (site.address()).port}`;
    });

    after(async () => {
      if (site) await new Promise((r) => site.close(() => r(undefined)));
      if (proxy) await proxy.close();
    });

    /** What reached formd of the upload at this path prefix, since the log's index from. */
    const upload = (from) => {
      const l = proxy.log.slice(from);
      const created = l.filter((x) => x.method === 'POST' && /\/uploads$/.test(x.path));
      return { l, created, patches: l.filter((x) => x.method === 'PATCH'), heads: l.filter((x) => x.method === 'HEAD') };
    };

    /**
     * Opens the page, fills in the name and the photo, holds back the
     * third 1 MiB chunk (a 5 MiB photo is 40 % through), presses Register
     * and waits until that chunk is on its way.
     */
    async function startUpload(ctx, name, bytes, percent = 40) {
      ctx.setDefaultTimeout(20000);
      const page = ctx.pages()[0] || (await ctx.newPage());
      await page.goto(origin + '/');
      await page.waitForSelector('form[data-formd][data-state]');
      await page.getByRole('textbox', { name: 'Name' }).fill(name);
      await page.getByLabel('Photo').setInputFiles({ name: 'photo.jpg', mimeType: 'image/jpeg', buffer: bytes });
      proxy.hold(3);
      await page.getByRole('button', { name: 'Register' }).click();
      await waitFor(() => proxy.held(), { timeout: 20000, what: 'the third chunk on its way' });
      await page.getByRole('status').filter({ hasText: `Uploading… ${percent} %` }).waitFor();
      return page;
    }

    test('a 5 MiB photo while the network drops halfway: saved on the device, resumed from the server offset, received once', async () => {
      const bytes = jpeg(5 * MiB);
      const name = person();
      const from = proxy.log.length;
      await withBrowser({}, async (ctx) => {
        const page = await startUpload(ctx, name, bytes);
        // The network goes: the held chunk's connection breaks, and every
        // request after it fails until it is back.
        await ctx.setOffline(true);
        /** @type {NonNullable<ReturnType<typeof proxy.held>>} */ (proxy.held()).drop();
        await page.getByRole('status').filter({ hasText: 'Saved on this device' }).waitFor();
        await ctx.setOffline(false);
        await page.waitForSelector('form[data-state="received"]', { timeout: 60000 });
        assert.equal(await page.getByRole('status').textContent(), 'Received. Thank you!');
      });
      const all = await entriesNamed(name);
      assert.equal(all.length, 1, 'received once');
      assert.equal(photoOf(all[0])[0].sha256, sha(bytes), 'the same bytes');
      const u = upload(from);
      assert.equal(u.created.length, 1, 'one upload made, not a second');
      assert.deepEqual(u.patches.slice(0, 2).map((p) => p.offset), [0, MiB]);
      // After the drop: HEAD for the offset, then the rest from 2 MiB.
      assert.ok(u.heads.length >= 1, 'asked for the offset');
      const after = u.patches.slice(2);
      assert.equal(after[0].offset, 2 * MiB, 'resumed at the server offset, not from 0');
      assert.deepEqual(after.map((p) => p.offset), [2 * MiB, 3 * MiB, 4 * MiB]);
      const sent = u.patches.reduce((n, p) => n + p.bytes, 0);
      assert.equal(sent, 5 * MiB, 'every byte reached formd once');
      assert.equal(u.l.filter((x) => x.method === 'POST' && /\/submissions$/.test(x.path)).length, 1, 'one submission');
    });

    test('the hosted page with JavaScript sends the photo over tus, then the submission: received once, the same bytes', async () => {
      const bytes = jpeg(2 * MiB + 1234);
      const name = person();
      const from = proxy.log.length;
      await withBrowser({}, async (ctx) => {
        ctx.setDefaultTimeout(20000);
        const page = ctx.pages()[0] || (await ctx.newPage());
        // The hosted page itself, through the recording proxy: its SDK
        // speaks to the same origin.
        await page.goto(proxy.base + '/f/photo');
        await page.waitForSelector('form[data-formd][data-state]');
        await page.getByRole('textbox', { name: 'Name', exact: true }).fill(name);
        await page.getByLabel('Photo').setInputFiles({ name: 'me.jpg', mimeType: 'image/jpeg', buffer: bytes });
        await page.getByRole('button', { name: 'Submit' }).click();
        await page.waitForSelector('form[data-state="received"]', { timeout: 60000 });
        assert.equal(await page.getByRole('status').textContent(), 'Received. Thank you!');
        assert.match(page.url(), /\/f\/photo/, 'the page stayed: the SDK sent it, not a plain post');
      });
      const all = await entriesNamed(name);
      assert.equal(all.length, 1, 'received once');
      assert.equal(photoOf(all[0])[0].sha256, sha(bytes), 'the same bytes');
      const u = upload(from);
      assert.equal(u.created.length, 1, 'one upload made');
      assert.equal(u.patches.reduce((n, p) => n + p.bytes, 0), bytes.length, 'every byte over tus, once');
      assert.equal(u.l.filter((x) => x.method === 'POST' && /\/submissions$/.test(x.path)).length, 1, 'one submission');
    });

    test('the page reloaded mid-upload: the outbox finishes the upload and the submission', async () => {
      const bytes = jpeg(5 * MiB);
      const name = person();
      const from = proxy.log.length;
      await withBrowser({}, async (ctx) => {
        const page = await startUpload(ctx, name, bytes);
        await page.reload();
        await page.waitForSelector('form[data-formd][data-state]');
        // The reloaded page's SDK finds the entry (and the photo's bytes)
        // in IndexedDB and finishes it; its status line says so.
        await page.waitForSelector('form[data-state="received"]', { timeout: 60000 });
        assert.equal(await page.getByRole('status').textContent(), 'Received. Thank you!');
        assert.equal(await page.evaluate(() => new Promise((res) => {
          const q = indexedDB.open('formd');
          q.onsuccess = () => {
            const g = q.result.transaction('outbox').objectStore('outbox').getAll();
            g.onsuccess = () => res(g.result.filter((e) => !e.kind).length);
          };
        })), 0, 'the outbox let go');
      });
      const all = await entriesNamed(name);
      assert.equal(all.length, 1, 'received once');
      assert.equal(photoOf(all[0])[0].sha256, sha(bytes), 'the same bytes');
      const u = upload(from);
      assert.equal(u.created.length, 1, 'the reloaded page resumed the same upload');
      const after = u.patches.slice(2);
      assert.equal(after[0].offset, 2 * MiB, 'resumed at the server offset');
      assert.equal(u.patches.reduce((n, p) => n + p.bytes, 0), 5 * MiB, 'every byte reached formd once');
    });

    test('the browser closed mid-upload: the next visit finishes it from the offset the server holds', async () => {
      const bytes = jpeg(3 * MiB);
      const name = person();
      const from = proxy.log.length;
      const profile = tempDir('formd-chromium-');
      try {
        await withBrowser(
          {},
          async (ctx) => {
            await startUpload(ctx, name, bytes, 66);
          },
          { dir: profile.dir },
        );
        // The chunk on its way when the browser went never reaches formd.
        const h = proxy.held();
        if (h) h.drop();
        assert.equal((await entriesNamed(name)).length, 0, 'nothing submitted before the next visit');
        await withBrowser(
          {},
          async (ctx) => {
            ctx.setDefaultTimeout(20000);
            const page = ctx.pages()[0] || (await ctx.newPage());
            await page.goto(origin + '/');
            await page.waitForSelector('form[data-state="received"]', { timeout: 60000 });
            assert.equal(await page.getByRole('status').textContent(), 'Received. Thank you!');
          },
          { dir: profile.dir },
        );
      } finally {
        profile.cleanup();
      }
      const all = await entriesNamed(name);
      assert.equal(all.length, 1, 'received once');
      assert.equal(photoOf(all[0])[0].sha256, sha(bytes), 'the same bytes');
      const u = upload(from);
      assert.equal(u.created.length, 1, 'the same upload, resumed');
      assert.equal(u.patches[2].offset, 2 * MiB, 'resumed at the server offset');
      assert.equal(u.patches.reduce((n, p) => n + p.bytes, 0), 3 * MiB, 'every byte reached formd once');
    });
  });
});
