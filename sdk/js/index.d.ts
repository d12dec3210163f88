// Types of index.js, the package's main entry: formd.js and messages.js.
export * from './formd.js';
export * from './messages.js';
export { drafts, DraftError } from './drafts.js';
export type { Draft, Drafts, DraftsOptions } from './drafts.js';
export * from './places.js';
