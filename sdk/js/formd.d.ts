// Types of the formd client SDK (formd.js). Checked with `tsc --noEmit`
// together with formd.js itself, whose JSDoc refers to these declarations.

import type { Solver } from './challenge.js';

/**
 * What the person sees.
 * - idle: nothing sent yet
 * - sending: on its way (the first try, or resumed after a reload)
 * - uploading: its files' bytes are being sent (uploads.js); `progress` says how far, in %
 * - saved: in the outbox on this device's durable storage; retried until the server answers
 * - unsaved: the device refused to store it (quota, private mode, storage full):
 *   still being sent, but only while this page (or app) stays open
 * - received: the server has it (stored, or journaled and being processed)
 * - waitlisted: received, on the waitlist
 * - duplicate: this person is already registered (no personal data shown)
 * - invalid: needs a fix; `errors` lists the fields
 * - closed: the form is not open
 * - full: every place is taken and there is no waitlist
 * - failed: refused for a reason retrying cannot fix (bad request, origin)
 */
export type State =
  | 'idle'
  | 'sending'
  | 'uploading'
  | 'saved'
  | 'unsaved'
  | 'received'
  | 'waitlisted'
  | 'duplicate'
  | 'invalid'
  | 'closed'
  | 'full'
  | 'failed';

/** The field error codes of formd (the errors of a 422 validation-failed). */
export type FieldErrorCode =
  | 'required'
  | 'invalid-value'
  | 'invalid-email'
  | 'invalid-phone'
  | 'invalid-option'
  | 'invalid-date'
  | 'not-a-number'
  | 'not-an-integer'
  | 'too-small'
  | 'too-large'
  | 'too-short'
  | 'too-long'
  | 'too-early'
  | 'too-late'
  | 'too-few'
  | 'too-many'
  | 'pattern'
  | 'unknown-field'
  | 'file-rejected'
  | 'file-too-large';

/** The problem codes of drafts and the participant's link that have a text of their own (messages.js "code-CODE"). */
export type ParticipantProblemCode =
  | 'draft-not-found'
  | 'draft-exists'
  | 'draft-version-mismatch'
  | 'draft-submitted'
  | 'drafts-disabled'
  | 'entry-link-not-found'
  | 'entry-version-mismatch'
  | 'if-match-required'
  | 'edit-closed'
  | 'entry-not-live';

/**
 * The problem codes that have a text of their own (messages.js "code-CODE"):
 * the uploads', and origin-not-allowed (a page on a site the form's
 * origins do not list: "failed", not retried).
 */
export type UploadProblemCode =
  | 'file-rejected'
  | 'payload-too-large'
  | 'upload-already-used'
  | 'upload-not-found'
  | 'upload-offset-mismatch'
  | 'upload-unavailable'
  | 'upload-storage-full'
  | 'scan-unavailable'
  | 'file-infected'
  | 'upload-file-lost'
  | 'origin-not-allowed';

/** One problem with one field, from a 422 validation-failed answer. */
export interface FieldError {
  field: string;
  /** A FieldErrorCode; "native" for the browser's own checks. */
  code: FieldErrorCode | 'native' | (string & {});
  /** The server's text, in English. */
  message: string;
  /** The bound a too-* code refers to: a number, a length, a count or a YYYY-MM-DD date. */
  limit?: string;
}

/** The status document: the success body and GET …/submissions/{key}. */
export interface StatusDoc {
  id: string;
  form: string;
  key: string;
  status: 'stored' | 'received' | 'waitlisted' | 'processing' | 'duplicate' | 'rejected' | 'cancelled' | (string & {});
  received_at: string;
  /** SHA-256 fingerprint of what was received, in hex. */
  receipt: string;
  /** The participant's link (a path, /e/{token}), on entries decided with one. */
  manage?: string;
}

/** An RFC 9457 problem document with formd's stable code. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  key?: string;
  errors?: FieldError[];
}

/** A change of state of one submission, as events and data-state show it. */
export interface StateEvent {
  state: State;
  form: string;
  /** The idempotency key; empty for states that no submission caused (idle, the browser's own checks). */
  key: string;
  /** The status document, on received and waitlisted. */
  doc?: StatusDoc;
  /** The server's problem document, on definitive errors; on saved, why the files wait (upload-unavailable: the server's storage is full). */
  problem?: Problem;
  /** Field errors, on invalid. */
  errors?: FieldError[];
  /** On received after a 202: the final outcome is still being polled for. */
  processing?: boolean;
  /** On saved and unsaved: milliseconds to the next try. */
  retryIn?: number;
  /** On uploading: the share of the files' bytes the server holds, 0–100. */
  progress?: number;
  /**
   * On received and waitlisted (an entry decided with a participant's
   * link): the link's URL (the status document's manage, resolved against
   * the endpoint), where the person sees, changes or cancels their entry.
   */
  manage?: string;
}

/**
 * One file of a submission, kept in the outbox with its entry until the
 * entry is settled: the bytes (a Blob, in IndexedDB) or where they are
 * (a mini-program file path), and how far its tus upload has got.
 */
export interface FileItem {
  name: string;
  /** The type the device gives; the server finds the real one from the bytes. */
  type: string;
  size: number;
  /** Browsers: the File or Blob itself. */
  blob?: Blob;
  /** Mini-programs: a file path (copied under the user data path when it can be). */
  path?: string;
  /** The upload's address, written to the outbox as soon as the server made it. */
  url?: string;
  /** The upload's id: the submission names it as "upload:<id>". */
  id?: string;
  /** The bytes the server held when last asked or answered. */
  offset?: number;
  /** Every byte is on the server and it accepted the file. */
  done?: boolean;
}

/** What uploads.js is given by the client for one entry. */
export interface UploadContext {
  send: (q: Omit<TransportRequest, 'timeout'> & { timeout?: number }) => Promise<TransportResponse>;
  save: (e: Entry) => Promise<boolean>;
  /** The platform's file access (mini-programs); without it, Blobs are sliced. */
  read?: (f: FileItem, start: number, end: number) => Promise<Blob | ArrayBuffer>;
  /** Bytes per PATCH. */
  chunk: number;
  retryAfter: (r: TransportResponse) => number;
  progress: (t: { size: number; sent: number }) => void;
  /** The proof-of-work for uploads to a form that asks for one (the client's Solver). */
  solve?: { wants: (url: string) => boolean; need: (url: string) => void; take: (url: string) => Promise<string> };
}

/** What one pass of uploads.js says the client does next. */
export type UploadStep =
  | { done: true; wait?: undefined; end?: undefined }
  | { wait: number; problem?: Problem; done?: undefined; end?: undefined }
  | { end: [State, Partial<StateEvent>]; done?: undefined; wait?: undefined };

/** The upload module's functions (uploads.js). */
export interface UploadModule {
  upload(c: UploadContext, e: Entry): Promise<UploadStep>;
  restart(e: Entry): void;
}

/** wx or uni: their file system manager, for miniProgramFiles() in uploads.js. */
export interface MiniProgramFiles {
  getFileSystemManager: () => {
    readFile: (o: {
      filePath: string;
      position?: number;
      length?: number;
      success?: (r: { data: string | ArrayBuffer }) => void;
      fail?: (err: { errMsg: string }) => void;
    }) => void;
    copyFileSync: (src: string, dest: string) => void;
    unlinkSync: (path: string) => void;
  };
  env?: { USER_DATA_PATH: string };
}

/** One submission in the outbox. */
export interface Entry {
  /** The idempotency key, kept until a definitive answer. */
  key: string;
  form: string;
  /** The submissions URL it is posted to. */
  url: string;
  data: Record<string, unknown>;
  /** When it was made, Unix ms. */
  at: number;
  /** How many times it has been posted, counted before each send: non-zero means it may have reached the server. */
  tries: number;
  /** Set on the outbox's arrival beacons, which are not submissions. */
  kind?: 'arrival';
  /** The files of file fields, uploaded before the entry is posted; their fields are filled with "upload:<id>" then. */
  files?: Record<string, FileItem[]>;
  /** Every file is uploaded and named in data. */
  ready?: boolean;
  /** How many times the uploads were made again because the server no longer had them. */
  redo?: number;
}

/** One arrival beacon (issue 10), as POST /v1/forms/{form}/arrivals takes it in `events`. */
export interface ArrivalEvent {
  /** The submission's idempotency key. */
  key: string;
  /** started: the person pressed send (the entry was written); answered: the definitive answer came. */
  type: 'started' | 'answered';
  /** Device clock, ms since the epoch. */
  at: number;
  /** On answered: the final state it ended in. */
  state?: State;
}

/**
 * The outbox. Each method resolves once the change is durable; put rejects
 * when the write failed, or resolves false when the entry is kept in
 * memory only: the person is then told it is not saved on the device.
 */
export interface Storage {
  put(e: Entry): Promise<void | boolean>;
  delete(key: string): Promise<void>;
  list(): Promise<Entry[]>;
}

export interface TransportRequest {
  /** HEAD and PATCH for uploads (tus); PUT for drafts (drafts.js). */
  method: 'GET' | 'POST' | 'PUT' | 'HEAD' | 'PATCH';
  url: string;
  headers: Record<string, string>;
  /** A chunk of a file (Blob in browsers, ArrayBuffer in mini-programs) for a PATCH. */
  body?: string | Blob | ArrayBuffer;
  /** Milliseconds before giving up on an answer. */
  timeout: number;
}

export interface TransportResponse {
  status: number;
  header(name: string): string | null;
  /** The parsed JSON body, or null. */
  body: any;
}

/**
 * Sends one request. It rejects on a network failure with an Error whose
 * `timeout` property says whether it timed out (so the request may have
 * reached the server); any HTTP answer resolves.
 */
export type Transport = (req: TransportRequest) => Promise<TransportResponse>;

export interface ClientOptions {
  /** Base URL of the formd server, e.g. "https://forms.example.org". Default: the page's origin. Required in mini-programs. */
  endpoint?: string;
  /** Default: IndexedDB, else localStorage, else memory. */
  storage?: Storage;
  /** Default: fetch. */
  transport?: Transport;
  /** Registers a callback for moments worth retrying at once; returns an unsubscribe function. Default: online, visibilitychange to visible, pageshow from the back-forward cache. */
  wake?: (cb: () => void) => () => void;
  /** Request timeout, ms. Default 15000. */
  timeout?: number;
  /** Backoff base, ms. Default 500. */
  baseDelay?: number;
  /** Backoff cap, ms. Default 30000. */
  maxDelay?: number;
  /** How long to poll the status after a 202, ms. Default 600000. */
  pollFor?: number;
  now?: () => number;
  random?: () => number;
  setTimeout?: (f: () => void, ms: number) => unknown;
  clearTimeout?: (id: any) => void;
  /**
   * Arrival beacons (issue 10): when each submission was started and
   * answered, sent to POST /v1/forms/{form}/arrivals through the outbox,
   * after the submissions. Default true; false turns them off.
   */
  arrivals?: boolean;
  /** Language tag for Client.lang (miniProgram() sets the system's). Default: the page's. */
  lang?: string;
  /** The upload module; default: import('./uploads.js') when a submission has files (miniprogram.js's miniProgram() sets it). */
  uploads?: UploadModule | Promise<UploadModule>;
  /** Reads a chunk of a kept file; default: the Blob's slice. */
  readFile?: (f: FileItem, start: number, end: number) => Promise<Blob | ArrayBuffer>;
  /** Keeps a chosen file for later launches (mini-programs copy it under the user data path). */
  keepFile?: (f: FileItem, key: string) => FileItem;
  /** Deletes a kept file once its entry is settled. */
  dropFile?: (f: FileItem) => void;
  /** Bytes per upload chunk (PATCH). Default 1 MiB. */
  chunkSize?: number;
  /** Proof-of-work for forms with spam.challenge (challenge.js). Default: a solver on this client's transport; false: none. */
  challenge?: Solver | false;
}

export interface SubmitOptions {
  /** The submissions URL, if not endpoint + /v1/forms/{form}/submissions. */
  url?: string;
  /** The idempotency key: a draft's (drafts.js), so that the submission consumes it. Default: a new one. */
  key?: string;
}

export interface Client {
  /**
   * Submits: writes an outbox entry with a new key, then sends it until a
   * definitive answer. Resolves with the first settled state (received,
   * waitlisted, duplicate, invalid, closed, full, failed) once the entry
   * has left the outbox. The same data
   * submitted again while the first is on its way joins it.
   */
  submit(form: string, data: Record<string, unknown>, opts?: SubmitOptions): Promise<StateEvent>;
  /** Retries every entry in the outbox now (also called on wake-ups and at creation). */
  flush(): Promise<void>;
  /** Subscribes to state changes; returns an unsubscribe function. */
  on(listener: (e: StateEvent) => void): () => void;
  /** The submissions still in the outbox. */
  pending(): Promise<Entry[]>;
  /**
   * Stops everything: wake-up listeners, timers, the send and poll loops;
   * no request starts after it and no listener is called. Entries stay in
   * the outbox for the next client; their submit() promises stay pending.
   */
  close(): void;
  /** The language of the texts for the person: "zh" or "en". */
  readonly lang: 'zh' | 'en';
  /** The proof-of-work solver; prepare(url) starts solving for a form ahead of its send. */
  readonly challenge?: Solver;
}

export interface EnhanceOptions {
  /** Default: one client shared by the page. */
  client?: Client;
  /**
   * Texts by "msg-STATE" and "err-CODE" (messages.js has them in English
   * and Chinese); a data-msg-* or data-err-* attribute on the status
   * element wins over them.
   */
  messages?: Record<string, string>;
}

/**
 * wx or uni: the parts of their API the adapter uses. Members are function
 * properties, not methods, so that test/types-wx.ts and types-uni.ts check
 * them strictly against miniprogram-api-typings and @dcloudio/types.
 */
export interface MiniProgramAPI {
  request: (o: {
    url: string;
    method: 'GET' | 'POST' | 'PUT' | 'HEAD';
    header: Record<string, string>;
    data?: string | ArrayBuffer;
    timeout: number;
    dataType: 'text';
    responseType: 'text';
    success: (res: { statusCode: number; header: Record<string, any>; data: string | Record<string, any> | ArrayBuffer }) => void;
    fail: (err: { errMsg: string }) => void;
  }) => unknown;
  getStorageSync: (key: string) => any;
  /** Throws when the write fails (e.g. the 10 MB limit). */
  setStorageSync: (key: string, value: any) => void;
  onNetworkStatusChange: (cb: (res: { isConnected: boolean }) => void) => void;
  /** The official typings give the listener of off… another result type than of on…: any keeps both checks. */
  offNetworkStatusChange: (cb: (res: any) => void) => void;
  /** wx, and uni on mini-program platforms. */
  onAppShow?: (cb: () => void) => void;
  offAppShow?: (cb: () => void) => void;
  /** The system's language ("zh_CN"); getSystemInfoSync where it is missing. */
  getAppBaseInfo?: () => { language?: string };
  getSystemInfoSync: () => { language?: string };
}

/** Options for createClient that run the SDK on a mini-program. */
export interface Adapter {
  transport: Transport;
  storage: Storage;
  wake: (cb: () => void) => () => void;
  /** Set by miniprogram.js: the upload module and the platform's file access. */
  uploads?: UploadModule;
  readFile?: (f: FileItem, start: number, end: number) => Promise<ArrayBuffer>;
  keepFile?: (f: FileItem, key: string) => FileItem;
  dropFile?: (f: FileItem) => void;
  /** The system's language tag, e.g. "zh_CN". */
  lang?: string;
}

export function createClient(options?: ClientOptions): Client;
export function enhance(form: HTMLFormElement, options?: EnhanceOptions): Client;
export function miniProgram(api: MiniProgramAPI, storageKey?: string): Adapter;
export function fetchTransport(f?: typeof fetch): Transport;
export function browserStorage(): Storage;
export function indexedDBStorage(name?: string, idb?: IDBFactory): Storage;
export function localStorageStorage(ls?: globalThis.Storage, prefix?: string): Storage;
export function memoryStorage(): Storage;
export function newKey(): string;
/** "zh" for a Chinese language tag, else "en"; default: the page's (html lang, navigator.language). */
export function language(tag?: string): 'zh' | 'en';
/** A field error's text from a template with {label}, {limit} and [a part kept only with a limit]. */
export function fieldText(template: string, error: FieldError, label?: string): string;
export function retryAfter(value: string | null | undefined, now: number): number;
