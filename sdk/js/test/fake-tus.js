// A fake tus 1.0 server in memory for the upload unit tests (uploads.test.js
// and the WeChat example's photo page): it keeps each upload's bytes,
// checks every offset as formd does (409 on a wrong one), answers
// submissions that name complete uploads, and logs what it saw.
import { res, netErr, doc } from './fakes.js';

export const BASE = 'https://formd.test';
export const SUBS = BASE + '/v1/forms/fair/submissions';

/**
 * A tus server in memory. hooks.patch(req, upload, n) may return a
 * response or throw (after the server kept `keep` bytes of the chunk, as a
 * real server keeps what arrived before a connection dropped).
 */
export function tusServer(hooks = {}, form = 'fair') {
  /** @type {Map<string, {size: number, data: Uint8Array, offset: number, field: string, meta: string}>} */
  const ups = new Map();
  const log = [];
  let seq = 0;
  let patches = 0;
  let received = 0;
  const handle = async (q) => {
    const m = new RegExp(`/v1/forms/${form}/uploads(?:/(\\w+))?$`).exec(q.url);
    const method = q.headers['X-HTTP-Method-Override'] || q.method;
    if (q.url.endsWith(`/v1/forms/${form}/submissions`) && method === 'POST') {
      log.push('submit');
      if (hooks.submit) {
        const r = hooks.submit(q);
        if (r) return r;
      }
      const data = JSON.parse(q.body);
      for (const v of Object.values(data)) {
        for (const ref of [v].flat()) {
          if (typeof ref !== 'string' || !ref.startsWith('upload:')) continue;
          const u = ups.get(ref.slice(7));
          if (!u || u.offset !== u.size) return res(422, { code: 'upload-not-found', status: 422 });
        }
      }
      return res(201, { ...doc(q.headers['Idempotency-Key']), data });
    }
    if (!m) return res(404, null);
    const id = m[1];
    if (!id && method === 'POST') {
      if (hooks.create) {
        const r = hooks.create(q);
        if (r) return r;
      }
      const nid = 'u' + ++seq;
      const meta = Object.fromEntries(q.headers['Upload-Metadata'].split(',').map((kv) => kv.split(' ')).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
      const size = Number(q.headers['Upload-Length']);
      ups.set(nid, { size, data: new Uint8Array(size), offset: 0, field: meta.field, meta });
      log.push(`create ${nid} ${meta.field} ${meta.filename}`);
      return res(201, null, { Location: `/v1/forms/${form}/uploads/${nid}`, 'Tus-Resumable': '1.0.0' });
    }
    const u = ups.get(id);
    if (!u) {
      log.push(`${method} ${id} 404`);
      return res(404, { code: 'upload-not-found', status: 404 });
    }
    if (method === 'HEAD') {
      log.push(`HEAD ${id} ${u.offset}`);
      return res(200, null, { 'Upload-Offset': u.offset, 'Upload-Length': u.size });
    }
    if (method === 'PATCH') {
      const at = Number(q.headers['Upload-Offset']);
      const chunk = new Uint8Array(q.body instanceof ArrayBuffer ? q.body : await q.body.arrayBuffer());
      patches++;
      if (at !== u.offset) {
        log.push(`PATCH ${id} @${at} 409`);
        return res(409, { code: 'upload-offset-mismatch', status: 409 });
      }
      if (hooks.patch) {
        const h = await hooks.patch(q, u, patches);
        if (h && h.keep !== undefined) {
          u.data.set(chunk.subarray(0, h.keep), u.offset);
          u.offset += h.keep;
          received += h.keep;
          log.push(`PATCH ${id} @${at} cut after ${h.keep}`);
          throw netErr(false);
        }
        if (h) return h;
      }
      u.data.set(chunk, u.offset);
      u.offset += chunk.length;
      received += chunk.length;
      log.push(`PATCH ${id} @${at} +${chunk.length}`);
      if (u.offset === u.size && hooks.finish) {
        const r = hooks.finish(u);
        if (r) return r;
      }
      return res(204, null, { 'Upload-Offset': u.offset });
    }
    return res(405, null);
  };
  return { handle, ups, log, received: () => received, transport: (q) => handle(q) };
}

/**
 * The server behind a fake wx/uni request(): the answer function for
 * fake-platform.js, failing as a phone without network while offline().
 * @param {ReturnType<typeof tusServer>} s
 * @param {() => boolean} offline
 */
export function wxAnswer(s, offline, seen = []) {
  return async (o) => {
    seen.push([o.method, o.header['X-HTTP-Method-Override'] || '', o.data instanceof ArrayBuffer]);
    if (o.url.endsWith('/arrivals')) return { statusCode: 202, header: {} };
    if (offline()) return { fail: 'offline' };
    try {
      const r = await s.handle({ method: o.method, url: o.url, headers: o.header, body: o.data });
      const h = {};
      for (const k of ['Location', 'Upload-Offset', 'Retry-After']) if (r.header(k)) h[k] = r.header(k);
      return { statusCode: r.status, header: h, data: r.body ? JSON.stringify(r.body) : '' };
    } catch {
      return { fail: 'offline' };
    }
  };
}

/**
 * A file system manager over an in-memory map of paths to bytes, as the
 * uploads use it (readFile with position and length, copyFileSync,
 * unlinkSync).
 * @param {Map<string, Uint8Array>} files
 */
export function fakeFS(files) {
  return {
    readFile: (o) =>
      setImmediate(() => {
        const b = files.get(o.filePath);
        if (!b) return o.fail({ errMsg: 'readFile:fail no such file or directory ' + o.filePath });
        const part = b.slice(o.position, o.position + o.length);
        o.success({ data: part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength) });
      }),
    copyFileSync: (a, b) => {
      if (!files.has(a)) throw new Error('copyFileSync:fail no such file');
      files.set(b, files.get(a));
    },
    unlinkSync: (p) => void files.delete(p),
  };
}
