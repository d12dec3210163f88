// @ts-check
/**
 * The package's main entry (`import … from '@formd/sdk'`): the SDK and its
 * English and Chinese texts. Bundlers keep only what a page imports.
 * @module formd
 */
export * from './formd.js';
export * from './messages.js';
// Drafts (save and resume, DESIGN §4), for pages and mini-programs alike.
export { drafts, DraftError } from './drafts.js';
// Options with places of their own: which are full (issue 32).
export * from './places.js';
