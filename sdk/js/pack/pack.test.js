// The packed SDK as an integrator gets it: pack.sh packs sdk/js with
// `npm pack` and installs the tarball here; these tests import every
// documented name from it in plain Node, build it with Vite and webpack 5
// and run the bundles, type-check the imports, and load it through
// WeChat's "构建 npm" layout (miniprogram_npm) in miniprogram-simulate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import vm from 'node:vm';
import { documented, entrySource, typesSource } from './names.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const installed = join(here, 'node_modules/@formd/sdk');
const out = join(here, 'build');
const require = createRequire(import.meta.url);

/** Every documented name, as "specifier name". */
const expected = [...documented()].flatMap(([spec, names]) => [...names].map((n) => `${spec} ${n}`));

/** A fresh project directory under build/ (inside this package, so '@formd/sdk' resolves to the installed tarball). */
function project(name) {
  const dir = join(out, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Checks what a bundle or module left on globalThis.formdCheck: every documented name, none undefined. */
function checkNames(where) {
  const got = /** @type {Record<string, unknown>} */ (globalThis.formdCheck);
  assert.ok(got, `${where}: the entry did not run`);
  assert.deepEqual(Object.keys(got).sort(), [...expected].sort(), `${where}: names`);
  const missing = Object.entries(got).filter(([, v]) => v === undefined).map(([k]) => k);
  assert.deepEqual(missing, [], `${where}: imported as undefined`);
  assert.equal(typeof got['@formd/sdk createClient'], 'function');
  assert.equal(typeof got['@formd/sdk messages'], 'function');
  assert.equal(/** @type {any} */ (got['@formd/sdk messages'])('zh')['msg-received'] !== undefined, true, `${where}: messages('zh') has texts`);
  delete globalThis.formdCheck;
}

test('the tarball is publishable: name, version, entries and types that exist, a README, no tests', () => {
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  assert.equal(pkg.name, '@formd/sdk');
  assert.match(pkg.version, /^\d+\.\d+\.\d+/);
  assert.ok(pkg.license);
  const files = readdirSync(installed).sort();
  for (const f of [pkg.main, pkg.module, pkg.types, 'README.md', 'README.zh.md']) assert.ok(files.includes(f), `${f} is in the tarball`);
  for (const [sub, target] of Object.entries(pkg.exports)) {
    const t = typeof target === 'string' ? { default: target } : target;
    for (const file of Object.values(t)) assert.ok(existsSync(join(installed, /** @type {string} */ (file))), `exports ${sub} → ${file} is in the tarball`);
  }
  for (const f of files) assert.doesNotMatch(f, /^(test|e2e|pack|node_modules|tsconfig.*|ci\.sh|embed\.go|package-lock\.json)$/, `${f} is not for the tarball`);
});

test('plain Node imports every documented name', () => {
  const dir = project('node');
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  writeFileSync(join(dir, 'main.js'), entrySource() + 'console.log(JSON.stringify(Object.fromEntries(Object.entries(globalThis.formdCheck).map(([k, v]) => [k, typeof v]))));\n');
  const got = JSON.parse(execFileSync(process.execPath, [join(dir, 'main.js')], { encoding: 'utf8' }));
  globalThis.formdCheck = Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v === 'undefined' ? undefined : v]));
  // messages is checked below by value; here by type.
  assert.deepEqual(Object.keys(got).sort(), [...expected].sort());
  assert.deepEqual(Object.entries(got).filter(([, v]) => v === 'undefined'), []);
  delete globalThis.formdCheck;
});

test('TypeScript finds the types of every documented name (bundler and node16 resolution)', () => {
  for (const resolution of ['bundler', 'node16']) {
    const dir = project('types-' + resolution);
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(dir, 'main.ts'), typesSource());
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', lib: ['es2022', 'dom'], module: resolution === 'bundler' ? 'esnext' : 'node16', moduleResolution: resolution, skipLibCheck: false, types: [] },
      files: ['main.ts'],
    }));
    execFileSync(join(here, 'node_modules/.bin/tsc'), ['-p', dir], { encoding: 'utf8', stdio: 'pipe' });
  }
});

test('Vite builds a page that imports every documented name', async () => {
  const dir = project('vite');
  writeFileSync(join(dir, 'index.html'), '<!doctype html><html><body><script type="module" src="./main.js"></script></body></html>\n');
  writeFileSync(join(dir, 'main.js'), entrySource());
  const { build } = await import('vite');
  await build({ root: dir, logLevel: 'error', configFile: false, build: { outDir: join(dir, 'dist'), minify: true, modulePreload: { polyfill: false } } });
  const assets = join(dir, 'dist/assets');
  const js = readdirSync(assets).filter((f) => f.endsWith('.js'));
  assert.equal(js.length, 1, 'one bundle');
  await import(pathToFileURL(join(assets, js[0])).href);
  checkNames('vite');
});

test('webpack 5 builds a page that imports every documented name', async () => {
  const dir = project('webpack');
  writeFileSync(join(dir, 'main.js'), entrySource());
  const webpack = (await import('webpack')).default;
  const stats = await new Promise((ok, fail) =>
    webpack({
      mode: 'production',
      context: dir,
      entry: './main.js',
      output: { path: join(dir, 'dist'), filename: 'main.js' },
      // A name the package does not export is an error, not a warning.
      module: { parser: { javascript: { exportsPresence: 'error' } } },
    }, (err, s) => (err ? fail(err) : ok(s))),
  );
  assert.equal(stats.hasErrors(), false, stats.toString({ all: false, errors: true }));
  vm.runInThisContext(readFileSync(join(dir, 'dist/main.js'), 'utf8'));
  checkNames('webpack');
});

test('WeChat "构建 npm": miniprogram_npm/@formd/sdk from the package main, the example app in miniprogram-simulate', async () => {
  const { build } = await import('esbuild');
  const dir = project('wx');
  const example = resolve(here, '../../../examples/miniprogram');
  cpSync(example, dir, { recursive: true, filter: (p) => !p.includes('node_modules') && !p.includes('miniprogram_npm') });
  // The developer tools build the package's `main` (a package without a
  // `miniprogram` directory) and what it imports into one CommonJS file.
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  assert.equal(pkg.miniprogram, undefined);
  const npmDir = join(dir, 'miniprogram_npm/@formd/sdk');
  await build({ entryPoints: [join(installed, pkg.main)], outfile: join(npmDir, 'index.js'), bundle: true, format: 'cjs', platform: 'neutral', logLevel: 'warning' });
  // The example's own files, each required from miniprogram_npm as the
  // mini-program runtime resolves '@formd/sdk'.
  const toNpm = {
    name: 'miniprogram_npm',
    setup(b) {
      b.onResolve({ filter: /^@formd\/sdk$/ }, (a) => {
        const rel = relative(dirname(join(dir, relative(example, a.importer))), npmDir);
        return { path: rel.startsWith('.') ? rel : './' + rel, external: true };
      });
    },
  };
  await build({ entryPoints: ['app.js', 'pages/register/index.js'].map((f) => join(example, f)), outdir: dir, outbase: example, bundle: true, format: 'cjs', platform: 'neutral', plugins: [toNpm], allowOverwrite: true, logLevel: 'warning' });
  assert.match(readFileSync(join(dir, 'pages/register/index.js'), 'utf8'), /require\("(\.\.\/)+miniprogram_npm\/@formd\/sdk"\)/);

  const sdk = require(npmDir);
  for (const n of documented().get('@formd/sdk') ?? []) assert.notEqual(sdk[n], undefined, `miniprogram_npm exports ${n}`);

  const { JSDOM } = await import('jsdom');
  const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
  for (const k of ['window', 'document', 'Node', 'Element', 'HTMLElement', 'Event', 'CustomEvent', 'requestAnimationFrame']) {
    globalThis[k] = k === 'window' ? dom.window : dom.window[k];
  }
  const { fakeWx } = await import('../test/fake-wx.js');
  const simulate = require('miniprogram-simulate');
  globalThis.wx = fakeWx({ answer: () => ({ fail: 'offline' }) });
  /** @type {any} */
  let app;
  globalThis.App = (def) => (app = def);
  globalThis.getApp = () => app;
  require(join(dir, 'app.js'));
  app.onLaunch();
  const page = simulate.render(simulate.load(join(dir, 'pages/register/index'), { compiler: 'simulate' }));
  page.attach(document.createElement('parent-wrapper'));
  page.instance.onLoad();
  await page.instance.onShow();
  assert.equal(page.querySelector('.title').dom.textContent.trim(), '春季集市报名');
  assert.equal(typeof app.formd.submit, 'function');
  app.formd.close();
});
