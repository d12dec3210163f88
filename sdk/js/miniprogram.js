// @ts-check
/**
 * The entry for mini-program npm builds (WeChat developer tools build
 * `main` and what it imports into miniprogram_npm/@formd/sdk, and nothing
 * else of the package): the SDK and its English and Chinese texts in one,
 * and the uploads module, imported here because mini-program builds have
 * no import(): miniProgram(wx) gives the client the module and the
 * platform's file access, so files chosen with chooseMedia are uploaded
 * in chunks over wx.request / uni.request.
 * @module formd/miniprogram
 */
import { miniProgram as core } from './formd.js';
import * as uploads from './uploads.js';

export * from './formd.js';
export * from './messages.js';
// Options with places of their own: which are full (issue 32).
export * from './places.js';
// Conditions (show_if): which fields are shown, by the rule the server
// and the hosted page use (issue 32).
export { answerOf, holds, shown } from './conditions.js';
export { miniProgramFiles } from './uploads.js';
// Drafts: save and resume over the adapter's transport
// (drafts({endpoint, transport: miniProgram(wx).transport})).
export { drafts, DraftError } from './drafts.js';
/** @typedef {import('./drafts.js').Draft} Draft */
/** @typedef {import('./drafts.js').Drafts} Drafts */

/**
 * formd.js's miniProgram() with uploads: chunks read with the file system
 * manager, chosen files copied under the user data path.
 * @param {import('./formd.js').MiniProgramAPI & Partial<import('./formd.js').MiniProgramFiles>} api
 * @param {string} [key]
 * @returns {import('./formd.js').Adapter}
 */
export function miniProgram(api, key) {
  const a = core(api, key);
  if (!api.getFileSystemManager) return a;
  const f = uploads.miniProgramFiles(/** @type {import('./formd.js').MiniProgramFiles} */ (api));
  return { ...a, uploads, readFile: f.read, keepFile: f.keep, dropFile: f.drop };
}
