// Measures the time from pressing Submit on the hosted page to the page
// showing "received", in headless Chromium against a real formd on
// loopback, and, as the baseline in the same run, a bare fetch() POST of the
// same kind of body from the same page (no outbox, no SDK).
//
//   node e2e/bench.js [runs]        (npm run bench -- [runs]; default 30)
//
// Uses $FORMD_BIN if set, else builds formd. Not a test: it asserts
// nothing beyond each submission being received.
import { Formd, formdBinary, withBrowser } from '../../../e2e/harness/harness.js';

const runs = Number(process.argv[2] || 30);

/** @param {number[]} xs */
function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: q(0.5), p90: q(0.9), min: s[0], max: s.at(-1) };
}

const fmt = (o) => Object.entries(o).map(([k, v]) => `${k} ${v.toFixed(1)} ms`).join(', ');

const binary = formdBinary();
const server = await Formd.create(binary.bin);
try {
  await withBrowser({}, async (ctx) => {
    await ctx.addInitScript(() => {
      // Capture phase on document: runs before the SDK's submit handler.
      document.addEventListener('submit', () => ((/** @type {any} */ (window)).__t0 = performance.now()), true);
      document.addEventListener('formd:received', () => ((/** @type {any} */ (window)).__t1 = performance.now()));
    });
    const page = ctx.pages()[0] || (await ctx.newPage());
    await page.goto(server.base + '/f/e2e');
    await page.waitForSelector('form[data-state=idle]');
    const sdk = [];
    const bare = [];
    for (let i = 0; i < runs + 3; i++) {
      const phone = `1390013${String(1000 + i)}`;
      await page.locator('#f-name').fill(`Bench ${i}`);
      await page.locator('#f-phone').fill(phone);
      await page.evaluate(() => ((/** @type {any} */ (window)).__t1 = 0));
      await page.locator('button[type=submit]').click();
      const ms = await page.waitForFunction(() => (/** @type {any} */ (window)).__t1 && (/** @type {any} */ (window)).__t1 - (/** @type {any} */ (window)).__t0);
      // The first few warm up the connection, IndexedDB and the server.
      if (i >= 3) sdk.push(await ms.jsonValue());

      const t = await page.evaluate(async (n) => {
        const t0 = performance.now();
        const r = await fetch('/v1/forms/e2e/submissions', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() },
          body: JSON.stringify({ name: `Bare ${n}`, phone: `1370013${String(1000 + n)}`, _ts: String(Date.now() - 60000) }),
        });
        await r.text();
        if (r.status !== 201) throw new Error(`bare POST: ${r.status}`);
        return performance.now() - t0;
      }, i);
      if (i >= 3) bare.push(t);
    }
    const stored = (await server.entries()).filter((e) => e.status === 'stored').length;
    console.log(`formd ${server.base}, Chromium headless, ${runs} runs each (after 3 warm-up), ${stored} entries stored`);
    console.log(`submit → "received" with the SDK (outbox in IndexedDB): ${fmt(summary(sdk))}`);
    console.log(`baseline, bare fetch POST → 201 from the same page:     ${fmt(summary(bare))}`);
  });
} finally {
  await server.close();
  binary.cleanup();
}
