// Measures how long a browser takes to solve formd's proof-of-work at the
// default difficulty (spam.difficulty 50,000: the number is uniform in
// 0..50,000), in headless Chromium, unthrottled and with the CPU slowed
// four times (CDP Emulation.setCPUThrottlingRate, the usual stand-in for a
// mid-range phone), for:
//   - widget: the hosted page's altcha widget with formd's worker (its
//     own `took`, from loading the challenge to the solution);
//   - widget-vendored: the same widget with its own vendored worker (one
//     crypto.subtle.digest promise per number), the baseline that made
//     formd serve its own worker;
//   - sdk-worker: challenge.js in a Web Worker (what the SDK does in a
//     browser);
//   - sdk-sliced: challenge.js on the page's thread in timer slices (what
//     it does where there is no Worker, as in mini-programs).
// Each run gets a fresh challenge made here in ALTCHA's format (the
// page's challenge request is answered by the test, so the per-address
// raise of a real server does not creep in).
//
//   node e2e/challenge-bench.js [runs]      (default 21)
//
// Not a test: it asserts nothing but that every challenge was solved.
import { createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Formd, formdBinary, withBrowser, waitFor } from '../../../e2e/harness/harness.js';

const runs = Number(process.argv[2] || 21);
const DIFFICULTY = 50000;
const forms = join(dirname(fileURLToPath(import.meta.url)), 'challenge-forms.yaml');

function issue() {
  const salt = randomBytes(12).toString('hex') + `?expires=${Math.floor(Date.now() / 1000) + 600}&form=pow&`;
  const challenge = createHash('sha256').update(salt + randomInt(DIFFICULTY + 1)).digest('hex');
  return { algorithm: 'SHA-256', challenge, maxnumber: DIFFICULTY, salt, signature: createHmac('sha256', 'bench').update(challenge).digest('hex') };
}

/** @param {number[]} xs */
function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return `median ${q(0.5).toFixed(0)} ms, p90 ${q(0.9).toFixed(0)} ms, max ${s.at(-1).toFixed(0)} ms (n=${s.length})`;
}

const binary = formdBinary();
const server = await Formd.create(binary.bin, { forms });
const results = {};
try {
  await withBrowser({}, async (ctx) => {
    ctx.setDefaultTimeout(60000);
    const page = ctx.pages()[0] || (await ctx.newPage());
    let next = issue();
    await page.route('**/v1/forms/pow/challenge', (route) => route.fulfill({ json: next }));
    let useVendored = false;
    const vendoredWorker = await (await fetch(server.base + '/static/altcha/worker.js')).text();
    await page.route('**/static/altcha/formd-worker.js*', (route) =>
      useVendored ? route.fulfill({ body: vendoredWorker, contentType: 'text/javascript' }) : route.continue(),
    );
    const cdp = await ctx.newCDPSession(page);
    for (const rate of [1, 4]) {
      const widget = [], vendored = [], worker = [], sliced = [];
      for (let i = 0; i < runs; i++) {
        for (const [list, own] of [[widget, true], [vendored, false]]) {
          next = issue();
          useVendored = !own;
          await page.goto(server.base + '/f/pow');
          await cdp.send('Emulation.setCPUThrottlingRate', { rate });
          const payload = await waitFor(() => page.locator('input[name=altcha]').inputValue(), { timeout: 120000, what: 'the widget solution' });
          list.push(JSON.parse(Buffer.from(payload, 'base64').toString()).took);
        }
        // The SDK on a page without a CSP (the hosted page's allows no
        // blob: workers; there the widget solves).
        await page.goto(server.base + '/healthz');
        await cdp.send('Emulation.setCPUThrottlingRate', { rate });
        const c1 = issue(), c2 = issue();
        const t = await page.evaluate(async ([c1, c2]) => {
          // @ts-ignore: a module URL the browser resolves
          const m = await import('/sdk/challenge.js');
          let t0 = performance.now();
          await m.solveInWorker(c1);
          const w = performance.now() - t0;
          t0 = performance.now();
          await m.solveSliced(c2);
          return [w, performance.now() - t0];
        }, [c1, c2]);
        worker.push(t[0]);
        sliced.push(t[1]);
      }
      results[`cpu x${rate}`] = { widget: summary(widget), 'widget-vendored': summary(vendored), 'sdk-worker': summary(worker), 'sdk-sliced': summary(sliced) };
      await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
    }
  });
} finally {
  await server.close();
  binary.cleanup();
}
console.log(`proof-of-work solving at difficulty ${DIFFICULTY} (${runs} runs each, headless Chromium ${process.env.CHROMIUM || '/usr/bin/chromium'}):`);
for (const [k, v] of Object.entries(results)) for (const [w, s] of Object.entries(v)) console.log(`  ${k.padEnd(7)} ${w.padEnd(16)} ${s}`);
