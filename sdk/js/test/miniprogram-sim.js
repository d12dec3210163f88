// The WeChat example (examples/miniprogram) in WeChat's
// miniprogram-simulate, shared by the tests of its pages: the page's JS,
// WXML and WXSS as the developer tools would build them (ES modules
// bundled to CommonJS, @formd/sdk from this worktree, as "构建 npm" puts it
// in miniprogram_npm), run with a fake wx on jsdom.
import { before, after } from 'node:test';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { JSDOM } from 'jsdom';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const example = resolve(here, '../../../examples/miniprogram');

/**
 * Builds the app and one page of the example before the file's tests (and
 * removes the build after them), and returns launch: it starts the app on
 * a fake wx (App() and its onLaunch, as WeChat does) and opens the page
 * (onLoad, onShow).
 * @param {string} pagePath the page, such as 'pages/register/index'
 */
export function examplePage(pagePath) {
  let dir = '';
  /** @type {any} */
  let simulate;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'formd-mp-'));
    cpSync(example, dir, { recursive: true, filter: (p) => !p.includes('node_modules') && !p.includes('miniprogram_npm') });
    await build({
      entryPoints: ['app.js', pagePath + '.js'].map((f) => join(example, f)),
      outdir: dir,
      outbase: example,
      bundle: true,
      format: 'cjs',
      platform: 'neutral',
      alias: { '@formd/sdk': resolve(here, '../miniprogram.js') },
      allowOverwrite: true,
      logLevel: 'warning',
    });
    const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
    for (const k of ['window', 'document', 'Node', 'Element', 'HTMLElement', 'Event', 'CustomEvent', 'requestAnimationFrame']) {
      globalThis[k] = k === 'window' ? dom.window : dom.window[k];
    }
    simulate = require('miniprogram-simulate');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * @param {any} wx
   * @param {Record<string, string>} [query] the page's query (onLoad)
   */
  return async function launch(wx, query) {
    globalThis.wx = wx;
    /** @type {any} */
    let app;
    globalThis.App = (def) => (app = def);
    globalThis.getApp = () => app;
    const appJs = join(dir, 'app.js');
    delete require.cache[appJs];
    require(appJs);
    app.onLaunch();
    const page = simulate.render(simulate.load(join(dir, pagePath), { compiler: 'simulate' }));
    page.attach(document.createElement('parent-wrapper'));
    page.instance.onLoad(query);
    await page.instance.onShow();
    /** @param {string} sel */
    const text = (sel) => {
      const el = page.querySelector(sel);
      return el ? el.dom.textContent.trim() : null;
    };
    return { app, page, text, close: () => app.formd.close() };
  };
}
