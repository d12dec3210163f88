// What the console's browser tests share: a real `formd serve` on a
// temporary data dir and a free loopback port, its setup link read from
// its first start, and Debian's Chromium driven by playwright-core. Every
// wait polls with a deadline; nothing sleeps a fixed time.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../..');
export const docsDir = join(repoRoot, 'docs');

export const chromiumArgs = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run',
];

export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** $FORMD_BIN (ci.sh builds it), else built here. */
export function formdBinary() {
  if (process.env.FORMD_BIN) return { bin: process.env.FORMD_BIN, cleanup: () => {} };
  const t = tempDir('formd-bin-');
  const bin = join(t.dir, 'formd');
  execFileSync('go', ['build', '-o', bin, './cmd/formd'], { cwd: repoRoot, stdio: 'inherit' });
  return { bin, cleanup: t.cleanup };
}

export function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** Polls fn until it returns a truthy value or the deadline passes. */
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

/** A formd server with the given forms (YAML text), and its setup link. */
export async function startFormd(bin, formsYAML, extraArgs = []) {
  const data = tempDir('formd-console-');
  const formsFile = join(data.dir, 'forms.yaml');
  writeFileSync(formsFile, formsYAML);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const p = spawn(bin, ['serve', '--data', join(data.dir, 'data'), '--addr', `127.0.0.1:${port}`, '--forms', formsFile, '--rate-limit', 'off', ...extraArgs],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  p.stderr.setEncoding('utf8');
  p.stderr.on('data', (s) => { log += s; });
  const exited = new Promise((res) => p.once('exit', res));
  await waitFor(async () => {
    if (p.exitCode !== null) throw new Error(`formd exited: ${log}`);
    const r = await fetch(base + '/readyz').catch(() => null);
    return r && r.ok && /admin\/setup\?code=/.test(log);
  }, { timeout: 20000, what: `formd ready on ${base}` });
  const setup = /(http:\/\/\S+\/admin\/setup\?code=\S+)/.exec(log)[1];
  const token = (/admin API token[^\n]*\n\s*\n\s+(\S+)/.exec(log) || [])[1];
  return {
    base, setup, token,
    log: () => log,
    async stop() {
      if (p.exitCode === null) {
        p.kill('SIGTERM');
        await exited;
      }
      data.cleanup();
    },
  };
}

export async function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: chromiumArgs });
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
 */
export async function startReceiver(failOnce) {
  const { createServer: createHTTP } = await import('node:http');
  const got = [];
  const seen = new Set();
  const srv = createHTTP((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const id = req.headers['webhook-id'];
      got.push(id);
      const fail = body.includes(failOnce) && !seen.has(id);
      seen.add(id);
      res.writeHead(fail ? 503 : 204);
      res.end(fail ? 'busy, try again' : '');
    });
  });
  await new Promise((res) => srv.listen(0, '127.0.0.1', res));
  return {
    url: `http://127.0.0.1:${srv.address().port}/hooks/formd`,
    got,
    close: () => new Promise((res) => srv.close(res)),
  };
}
