// What the browser suites share (the SDK's, sdk/js/e2e, and the owner
// console's, e2e/console): a real `formd serve` on a temporary data dir and
// a free loopback port, Debian's Chromium (/usr/bin/chromium, never a
// downloaded build) driven by playwright-core, and small servers a test
// talks to. Every wait polls with a deadline; nothing sleeps a fixed time.
//
// Teardown: each test file stops what it started in its after hooks; a
// formd still running when the process exits is killed then (playwright
// does the same for its browsers), and when a test has failed, the log of
// every formd the file started is printed, so that a failure in CI shows
// what the server said.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../..');
export const docsDir = join(repoRoot, 'docs');
/** The forms a Formd starts with unless told otherwise: the SDK suite's. */
export const formsFile = join(repoRoot, 'sdk/js/e2e/forms.yaml');
/** Where the SDK suite's screenshots go (not in git). */
export const outputDir = process.env.FORMD_TEST_OUTPUT || join(repoRoot, 'sdk/js/test-output');
export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A temporary directory, removed by the returned cleanup. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The formd binary: $FORMD_BIN (the suites' ci.sh build it once), else
 * built here into a temporary directory.
 */
export function formdBinary() {
  if (process.env.FORMD_BIN) return { bin: process.env.FORMD_BIN, cleanup: () => {} };
  const t = tempDir('formd-bin-');
  const bin = join(t.dir, 'formd');
  execFileSync('go', ['build', '-o', bin, './cmd/formd'], { cwd: repoRoot, stdio: 'inherit' });
  return { bin, cleanup: t.cleanup };
}

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => res(port));
    });
  });
}

/**
 * Polls fn until it returns a truthy value or the deadline passes.
 * @template T
 * @param {() => Promise<T> | T} fn
 * @param {{timeout?: number, every?: number, what?: string}} [o]
 * @returns {Promise<T>}
 */
export async function waitFor(fn, { timeout = 15000, every = 50, what = 'condition' } = {}) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, every));
  }
}

/** Every Formd this process made, for the exit handler below. */
const servers = new Set();
const logTail = 200;

process.on('exit', (code) => {
  for (const f of servers) {
    if (f.proc && f.proc.exitCode === null && !f.proc.signalCode) f.proc.kill('SIGKILL');
  }
  // node --test sets a failing file's exit code; its stderr is shown with
  // the file's results.
  if (code === 0) return;
  for (const f of servers) {
    const lines = f.log.trimEnd().split('\n');
    const shown = lines.slice(-logTail).join('\n');
    process.stderr.write(`\nformd on ${f.base}, its log${lines.length > logTail ? ` (the last ${logTail} of ${lines.length} lines)` : ''}:\n${shown}\n`);
  }
});

/**
 * One formd server process. start() runs it (again, after a kill, on the
 * same port and data dir). The admin token and the setup link are the
 * latest ones it printed.
 */
export class Formd {
  /**
   * @param {string} bin
   * @param {{dataDir: string, port: number, forms?: string, args?: string[]}} o
   *   forms: a forms file; args: more `formd serve` flags
   */
  constructor(bin, { dataDir, port, forms = formsFile, args = [] }) {
    Object.assign(this, { bin, dataDir, port, forms, args });
    this.base = `http://127.0.0.1:${port}`;
    this.token = '';
    this.setup = '';
    this.log = '';
    /** @type {import('node:child_process').ChildProcess | null} */
    this.proc = null;
    /** @type {(() => void) | null} */
    this.cleanupData = null;
    servers.add(this);
  }

  /**
   * A formd on a new temporary directory (removed by close()), started.
   * @param {string} bin
   * @param {{forms?: string, yaml?: string, args?: string[], port?: number}} [o]
   *   forms: a forms file (the SDK suite's by default); yaml: the forms'
   *   text instead; args: more `formd serve` flags
   */
  static async create(bin, { forms, yaml, args, port } = {}) {
    const tmp = tempDir('formd-e2e-');
    if (yaml !== undefined) {
      forms = join(tmp.dir, 'forms.yaml');
      writeFileSync(forms, yaml);
    }
    const f = new Formd(bin, { dataDir: join(tmp.dir, 'data'), port: port || (await freePort()), forms, args });
    f.cleanupData = tmp.cleanup;
    await f.start();
    return f;
  }

  async start() {
    const args = ['serve', '--data', this.dataDir, '--addr', `127.0.0.1:${this.port}`, '--forms', this.forms, '--rate-limit', 'off', ...this.args];
    const p = spawn(this.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc = p;
    this.exited = new Promise((res) => p.once('exit', (code, signal) => res({ code, signal })));
    // A formd a test forgot to stop does not keep the test process alive
    // (the exit handler kills it); kill() and stop() hold it while they
    // wait for the exit.
    p.unref();
    p.stderr.unref();
    p.stderr.setEncoding('utf8');
    let startLog = '';
    p.stderr.on('data', (s) => {
      this.log += s;
      startLog += s;
    });
    // Ready once /readyz answers and the start's banner is out: the setup
    // link if no account exists yet, then the admin token (printed on the
    // first start) or a line saying one was issued before.
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`formd exited (${p.exitCode}): ${this.log}`);
        if (!/Make a new one with 'formd token'|an admin token was already issued/.test(startLog)) return false;
        const r = await fetch(this.base + '/readyz').catch(() => null);
        return r && r.ok;
      },
      { timeout: 20000, what: `formd ready on ${this.base}` },
    ).catch((err) => {
      throw new Error(`${err.message}\nformd's log:\n${this.log}`);
    });
    const token = /admin API token[^\n]*\n\s*\n\s+(\S+)/.exec(startLog);
    if (token) this.token = token[1];
    const setup = /(http:\/\/\S+\/admin\/setup\?code=\S+)/.exec(startLog);
    if (setup) this.setup = setup[1];
    if (!this.token) throw new Error(`no admin token in the first start's log:\n${this.log}`);
  }

  /** kill -9, as a crash would: nothing gets to shut down cleanly. */
  async kill() {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode) return;
    this.proc.ref();
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** A graceful stop (SIGTERM), then SIGKILL after 10 s. */
  async stop() {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode) return;
    this.proc.ref();
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc && this.proc.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(timer);
  }

  /** Stops it and removes the temporary directory create() made. */
  async close() {
    await this.stop();
    if (this.cleanupData) this.cleanupData();
  }

  /** Every entry of a form, from the admin export API (jsonl). */
  async entries(form = 'e2e') {
    const r = await fetch(`${this.base}/v1/admin/forms/${form}/export?format=jsonl`, { headers: { Authorization: `Bearer ${this.token}` } });
    if (!r.ok) throw new Error(`export: ${r.status} ${await r.text()}`);
    return (await r.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }

  /** The entries whose phone is this number (as typed, Chinese mobile). */
  async entriesFor(phone, form = 'e2e') {
    return (await this.entries(form)).filter((e) => e.data && e.data.phone === '+86' + phone);
  }

  /** Applies form definitions (YAML) through the admin API. */
  async applyForms(yaml) {
    const r = await fetch(`${this.base}/v1/admin/forms`, { method: 'PUT', headers: { Authorization: `Bearer ${this.token}`, 'Content-Type': 'application/yaml' }, body: yaml });
    if (!r.ok) throw new Error(`apply forms: ${r.status} ${await r.text()}`);
  }

  /** The public status document of a key, or null for 404. */
  async status(key, form = 'e2e') {
    const r = await fetch(`${this.base}/v1/forms/${form}/submissions/${encodeURIComponent(key)}`);
    if (r.status === 404) return null;
    if (!r.ok) throw new Error(`status: ${r.status}`);
    return r.json();
  }
}

/**
 * Headless Chromium, for tests that open contexts of their own; the
 * caller closes it (browser.close()).
 * @param {import('playwright-core').LaunchOptions} [options]
 */
export function launch(options = {}) {
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs, ...options });
}

/**
 * Runs fn with a Chromium persistent context on a fresh user-data-dir
 * (real on-disk IndexedDB), closed and removed afterwards unless reused.
 * @param {object} options context options (viewport, locale, …)
 * @param {(ctx: import('playwright-core').BrowserContext, dir: string) => Promise<void>} fn
 * @param {{dir?: string}} [reuse] reopen an existing user-data-dir
 */
export async function withBrowser(options, fn, reuse = {}) {
  const t = reuse.dir ? { dir: reuse.dir, cleanup: () => {} } : tempDir('formd-chromium-');
  const ctx = await chromium.launchPersistentContext(t.dir, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    ...options,
  });
  try {
    await fn(ctx, t.dir);
  } finally {
    await ctx.close().catch(() => {});
    if (!reuse.dir) t.cleanup();
  }
}

/** Makes the SDK suite's output directory. */
export function ensureOutputDir() {
  if (!existsSync(outputDir)) mkdirSync(outputDir, { recursive: true });
  return outputDir;
}

/** Submits as a person would through the public API; returns the body. */
export async function submit(base, form, values, { key, prefer } = {}) {
  const headers = { 'Content-Type': 'application/json' };
  if (key) headers['Idempotency-Key'] = key;
  if (prefer) headers.Prefer = prefer;
  const r = await fetch(`${base}/v1/forms/${form}/submissions`, { method: 'POST', headers, body: JSON.stringify(values) });
  const body = await r.json();
  if (r.status >= 300) throw new Error(`submit ${form}: ${r.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * A webhook receiver on loopback: it answers 204 and keeps every
 * request's webhook-id; the first delivery of an event whose body holds
 * failOnce it answers 503.
 * @param {string} failOnce
 */
export async function startReceiver(failOnce) {
  const { createServer: httpServer } = await import('node:http');
  const got = [];
  const seen = new Set();
  const srv = httpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      got.push(id);
      const fail = body.includes(failOnce) && !seen.has(id);
      seen.add(id);
      res.writeHead(fail ? 503 : 204);
      res.end(fail ? 'busy, try again' : '');
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', () => r(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  return {
    url: `http://127.0.0.1:${port}/hooks/formd`,
    got,
    close: () => new Promise((r) => srv.close(() => r(undefined))),
  };
}

/**
 * A recording HTTP proxy in front of formd (issue 20's upload tests): it
 * logs what reached the server — each request's method (after
 * X-HTTP-Method-Override), path, Upload-Offset and the body bytes it
 * forwarded — and can hold back one PATCH (the nth) so that a test can cut
 * the network or reload the page while that chunk is on its way: a held
 * PATCH is never forwarded; when the browser gives up on it (offline,
 * reload) it is dropped.
 * @param {string} target formd's base URL
 */
export async function recordingProxy(target) {
  const { createServer: httpServer, request } = await import('node:http');
  const t = new URL(target);
  /** @type {{method: string, path: string, offset: number | null, bytes: number, status: number}[]} */
  const log = [];
  let patches = 0;
  /** @type {number} */
  let holdAt = 0;
  /** @type {null | {path: string, release: () => void, drop: () => void}} */
  let held = null;
  const srv = httpServer((req, res) => {
    const method = String(req.headers['x-http-method-override'] || req.method);
    const entry = { method, path: String(req.url), offset: req.headers['upload-offset'] == null ? null : Number(req.headers['upload-offset']), bytes: 0, status: 0 };
    const forward = () => {
      log.push(entry);
      const up = request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        entry.status = r.statusCode || 0;
        res.writeHead(r.statusCode || 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.on('data', (b) => (entry.bytes += b.length));
      req.on('aborted', () => up.destroy());
      req.pipe(up);
    };
    if (method === 'PATCH' && ++patches === holdAt) {
      // Held: nothing of it reaches formd.
      held = {
        path: entry.path,
        release: () => forward(),
        drop: () => {
          req.destroy();
          res.destroy();
        },
      };
      // The browser gave up on it (offline, reload, closed): its
      // connection closes.
      const gone = () => held && held.path === entry.path && (held = null);
      res.on('close', gone);
      req.socket.on('close', gone);
      return;
    }
    forward();
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', () => r(undefined)));
  const { port } = /** @type {import('node:net').AddressInfo} */ (srv.address());
  return {
    base: `http://127.0.0.1:${port}`,
    log,
    /** Holds back the nth PATCH from now on (1 = the next one). */
    hold: (n) => {
      holdAt = patches + n;
    },
    held: () => held,
    close: () => new Promise((r) => (srv.closeAllConnections(), srv.close(() => r(undefined)))),
  };
}

/** The console suites' first owner and the password every account of theirs has. */
export const owner = { email: 'owner@example.org', password: 'correct horse battery staple' };

/**
 * Makes the first owner through srv's one-time setup link in page, and
 * waits until the console says so (the owner is then signed in there).
 * @param {import('playwright-core').Page} page
 * @param {Formd} srv
 */
export async function setUpOwner(page, srv, { email = owner.email, password = owner.password } = {}) {
  await page.goto(srv.setup);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Create the owner account' }).click();
  await page.getByRole('status').filter({ hasText: 'formd is set up' }).waitFor();
}

/**
 * Signs page in on srv's console and waits for its "Sign out" button.
 * @param {import('playwright-core').Page} page
 * @param {Formd} srv
 */
export async function signIn(page, srv, email = owner.email, password = owner.password) {
  await page.goto(srv.base + '/admin/login');
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/**
 * A new browser context with one page signed in on srv's console (the
 * owner unless told otherwise); the caller closes ctx.
 * @param {import('playwright-core').Browser} browser
 * @param {Formd} srv
 * @param {import('playwright-core').BrowserContextOptions} [options]
 */
export async function signedInPage(browser, srv, options = {}, email = owner.email, password = owner.password) {
  const ctx = await browser.newContext({ locale: 'en-US', ...options });
  const page = await ctx.newPage();
  await signIn(page, srv, email, password);
  return { ctx, page };
}

/**
 * A suite's formd, for its before(): the binary (formdBinary) and a server
 * started with Formd.create's options; with publicURL, the server is
 * started again with --public-url naming its own address (known only once
 * it has one), as links in e-mails need. The returned stop() is for the
 * suite's after(). Whatever started is stopped again if a later step fails.
 * @param {{forms?: string, yaml?: string, args?: string[], port?: number, publicURL?: boolean}} [options]
 */
export async function startFormd({ publicURL = false, ...options } = {}) {
  const bin = formdBinary();
  /** @type {Formd | undefined} */
  let srv;
  try {
    const args = options.args || [];
    srv = await Formd.create(bin.bin, publicURL ? { ...options, args: ['--public-url', 'http://placeholder.invalid', ...args] } : options);
    if (publicURL) {
      await srv.stop();
      srv.args = ['--public-url', srv.base, ...args];
      await srv.start();
    }
  } catch (e) {
    await srv?.close();
    bin.cleanup();
    throw e;
  }
  const started = srv;
  return {
    bin,
    srv: started,
    stop: async () => {
      await started.close();
      bin.cleanup();
    },
  };
}

/**
 * A console suite's formd (startFormd's options) with Chromium beside it
 * and, unless owner is false, the first owner set up (setUpOwner) in a
 * context closed again. stop() closes the browser, then the server.
 * @param {Parameters<typeof startFormd>[0]} [options]
 * @param {{owner?: boolean}} [how]
 */
export async function startConsole(options = {}, { owner: setUp = true } = {}) {
  const f = await startFormd(options);
  /** @type {import('playwright-core').Browser | undefined} */
  let browser;
  try {
    browser = await launch();
    if (setUp) {
      const ctx = await browser.newContext({ locale: 'en-US' });
      await setUpOwner(await ctx.newPage(), f.srv);
      await ctx.close();
    }
  } catch (e) {
    await browser?.close();
    await f.stop();
    throw e;
  }
  const b = browser;
  return {
    ...f,
    browser: b,
    stop: async () => {
      await b.close();
      await f.stop();
    },
  };
}
