// Types of uploads.js, the outbox's tus uploads (loaded by formd.js when a
// submission has files).
import type { Entry, FileItem, MiniProgramFiles, UploadContext, UploadStep } from './formd.js';

export function upload(c: UploadContext, e: Entry): Promise<UploadStep>;
export function restart(e: Entry): void;
export function readBlob(f: FileItem, start: number, end: number): Promise<Blob | ArrayBuffer>;
export function b64(s: string): string;
export function resolve(loc: string, base: string): string;
export function miniProgramFiles(api: MiniProgramFiles): {
  read(f: FileItem, start: number, end: number): Promise<ArrayBuffer>;
  keep(f: FileItem, key: string): FileItem;
  drop(f: FileItem): void;
};
