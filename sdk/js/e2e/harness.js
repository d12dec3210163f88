// What the end-to-end tests and the benchmark share: a real `formd serve`
// on a temporary data dir and a free loopback port, Debian's Chromium driven
// by playwright-core with a fresh user-data-dir, and ways to ask the server
// what it stored. Everything waits by polling with a deadline, never by a
// fixed sleep.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');
export const formsFile = join(here, 'forms.yaml');
export const outputDir = process.env.FORMD_TEST_OUTPUT || resolve(here, '../test-output');
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
 * The formd binary: $FORMD_BIN (ci.sh builds it once), else built here into
 * a temporary directory.
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

/**
 * One formd server process. start() runs it (again, after a kill, on the
 * same port and data dir); the admin token is the latest one it printed.
 */
export class Formd {
  constructor(bin, { dataDir, port, forms = formsFile }) {
    Object.assign(this, { bin, dataDir, port, forms });
    this.base = `http://127.0.0.1:${port}`;
    this.token = '';
    this.log = '';
    /** @type {import('node:child_process').ChildProcess | null} */
    this.proc = null;
  }

  static async create(bin, opts = {}) {
    const data = tempDir('formd-data-');
    const f = new Formd(bin, { dataDir: data.dir, port: opts.port || (await freePort()), forms: opts.forms });
    f.cleanupData = data.cleanup;
    await f.start();
    return f;
  }

  async start() {
    const args = ['serve', '--data', this.dataDir, '--addr', `127.0.0.1:${this.port}`, '--forms', this.forms, '--rate-limit', 'off'];
    const p = spawn(this.bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.proc = p;
    this.exited = new Promise((res) => p.once('exit', (code, signal) => res({ code, signal })));
    p.stderr.setEncoding('utf8');
    let startLog = '';
    p.stderr.on('data', (s) => {
      this.log += s;
      startLog += s;
      // formd prints a new admin token at each start until one is used,
      // and only the latest is valid.
      const m = /admin (?:API )?token[^\n]*\n\s*\n\s+(\S+)/.exec(startLog);
      if (m) this.token = m[1];
    });
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`formd exited: ${this.log}`);
        const r = await fetch(this.base + '/readyz').catch(() => null);
        return r && r.ok;
      },
      { timeout: 20000, what: `formd ready on ${this.base}` },
    );
    if (!this.token) throw new Error('no admin token in the first start log');
  }

  /** kill -9, as a crash would: nothing gets to shut down cleanly. */
  async kill() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** A graceful stop (SIGTERM). */
  async stop() {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode) return;
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc && this.proc.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(timer);
  }

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
 * Runs fn with a Chromium persistent context on a fresh user-data-dir
 * (real on-disk IndexedDB), closed and removed afterwards unless keep.
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

/** Makes the test output directory. */
export function ensureOutputDir() {
  if (!existsSync(outputDir)) mkdirSync(outputDir, { recursive: true });
  return outputDir;
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
