import type { Transport } from './formd.js';

/** A saved draft, as the server last answered it. */
export interface Draft {
  form: string;
  /** The submission's idempotency key: submit under it to send the draft. */
  key: string;
  /** The resume token (a capability: whoever has it opens the draft); "" before the first save. */
  token: string;
  /** The version last read or written (the ETag); 0 before the first save. */
  version: number;
  savedAt?: string;
  expiresAt?: string;
  /** The hosted page that opens the draft on any device: endpoint + /f/{form}?resume={token}. */
  resumeURL?: string;
  /** The values saved, as field → value. */
  data?: Record<string, unknown>;
}

export interface DraftsOptions {
  /** Base URL of the formd server. Default: the page's origin. Required in mini-programs. */
  endpoint?: string;
  /** Default: fetch. A mini-program passes its adapter's transport. */
  transport?: Transport;
  /** Request timeout, ms. Default 15000. */
  timeout?: number;
}

export interface Drafts {
  /**
   * Saves values as the draft d (a new one when d.token is ""): resolves
   * with the new version once the server holds it durably; rejects with a
   * DraftError (code draft-version-mismatch with the current version when
   * another window saved since; draft-submitted; draft-not-found) or a
   * network error (nothing known to be saved: try again).
   */
  save(d: Draft, values: Record<string, unknown>): Promise<Draft>;
  /**
   * E-mails the draft's resume link to the address in its e-mail field, in
   * lang (en or zh): resolves once the mail server accepted the message;
   * rejects with a DraftError (draft-no-email, email-not-configured,
   * draft-email-limited, draft-email-failed, draft-not-found) otherwise.
   */
  mail(d: Draft, lang?: string): Promise<void>;
  /** Opens the draft a resume token names, with its key, version and values. */
  resume(form: string, token: string): Promise<Draft>;
}

/** A refused save or read. */
export class DraftError extends Error {
  constructor(status: number, problem: any);
  status: number;
  /** The problem's code: draft-version-mismatch, draft-submitted, draft-not-found, drafts-disabled, … */
  code: string;
  /** On draft-version-mismatch: the current version. */
  version?: number;
  /** On draft-submitted: the entry's status. */
  entryStatus?: string;
}

/** The drafts API for any runtime. */
export function drafts(options?: DraftsOptions): Drafts;

/** A form's values as a draft keeps them (no files, no _key/_ts, no honeypot). */
export function values(form: HTMLFormElement): Record<string, unknown>;

/** Puts a draft's values back into a form. */
export function fill(form: HTMLFormElement, data: Record<string, unknown>): void;

/** Binds drafts to a hosted page's form (data-formd-drafts). */
export function watch(form: HTMLFormElement, options?: { api?: Drafts; delay?: number }): { draft: () => Draft; save: () => Promise<void> };
