// Types of miniprogram.js: formd.js and messages.js in one entry, and
// miniProgram() with uploads, and the drafts API.
import type { Adapter, MiniProgramAPI, MiniProgramFiles } from './formd.js';
export * from './formd.js';
export * from './messages.js';
// Options with places of their own: which are full (issue 32).
export * from './places.js';
// Conditions (show_if): which fields are shown (issue 32).
export { answerOf, holds, shown } from './conditions.js';
export type { Condition } from './conditions.js';
export { miniProgramFiles } from './uploads.js';
export { drafts, DraftError } from './drafts.js';
export type { Draft, Drafts, DraftsOptions } from './drafts.js';
export function miniProgram(api: MiniProgramAPI & Partial<MiniProgramFiles>, storageKey?: string): Adapter;
