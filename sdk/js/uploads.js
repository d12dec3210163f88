// @ts-check
/**
 * The outbox's file uploads (issue 20): the bytes of a submission's files
 * go to formd over the tus protocol 1.0 before the submission that names
 * them ("photo": "upload:<id>"). Each file is kept with its entry in the
 * outbox (a Blob in IndexedDB; a file saved under the mini-program's user
 * data path), its upload's address is written to the outbox as soon as
 * the server made it, and every try starts by asking the server (HEAD)
 * how many bytes it holds, then sends the rest in chunks (PATCH, or POST
 * with X-HTTP-Method-Override: PATCH where the platform has no PATCH).
 * So a reload, an offline period, a closed tab or an app sent to the
 * background resumes where the bytes stopped, never from the start. An
 * upload the server no longer knows (expired: 404 or 410) is made again
 * from the kept file.
 *
 * formd.js loads this module only when a submission carries a file
 * (import()), so pages without file fields do not pay for it;
 * miniprogram.js imports it, as mini-program builds have no import().
 *
 * @module formd/uploads
 */

/** @typedef {import('./formd.js').FileItem} FileItem */
/** @typedef {import('./formd.js').Entry} Entry */
/** @typedef {import('./formd.js').UploadContext} UploadContext */
/** @typedef {import('./formd.js').UploadStep} UploadStep */
/** @typedef {import('./formd.js').MiniProgramFiles} MiniProgramFiles */

const TUS = '1.0.0';

/** tus's Upload-Metadata: comma-separated "key base64(value)". @param {Record<string, string>} m */
function metadata(m) {
  return Object.keys(m)
    .filter((k) => m[k])
    .map((k) => k + ' ' + b64(m[k]))
    .join(',');
}

/** Base64 of a string's UTF-8 bytes, without btoa (mini-programs lack it). @param {string} s */
export function b64(s) {
  const a = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const b = Array.from(unescape(encodeURIComponent(s)), (c) => c.charCodeAt(0));
  let out = '';
  for (let i = 0; i < b.length; i += 3) {
    const n = (b[i] << 16) | ((b[i + 1] || 0) << 8) | (b[i + 2] || 0);
    out += a[n >> 18] + a[(n >> 12) & 63] + (i + 1 < b.length ? a[(n >> 6) & 63] : '=') + (i + 2 < b.length ? a[n & 63] : '=');
  }
  return out;
}

/**
 * An absolute address for a Location header, against the submissions URL
 * (no URL class: mini-programs lack it).
 * @param {string} loc
 * @param {string} base
 */
export function resolve(loc, base) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(loc)) return loc;
  const origin = (/^[a-z][a-z0-9+.-]*:\/\/[^/]+/i.exec(base) || [''])[0];
  return origin + loc;
}

/** The form's uploads address, from its submissions URL. @param {string} url */
const uploadsURL = (url) => url.replace(/\/submissions$/, '/uploads');

/**
 * A definitive answer about one file: the entry is settled with it.
 * @param {string} field
 * @param {import('./formd.js').TransportResponse} r
 * @returns {UploadStep}
 */
function refused(field, r) {
  const p = r.body || { status: r.status, code: r.status === 413 ? 'payload-too-large' : 'upload-refused' };
  const code = p.code === 'payload-too-large' || r.status === 413 ? 'file-too-large' : p.code === 'file-rejected' ? 'file-rejected' : '';
  if (code) return { end: ['invalid', { problem: p, errors: [{ field, code, message: p.detail || p.title || code }] }] };
  return { end: ['failed', { problem: p }] };
}

/** Statuses worth another try: the server's state may change. @param {number} s */
const transient = (s) => s >= 500 || s === 408 || s === 423 || s === 425 || s === 429;

/**
 * The total and sent bytes of an entry's files.
 * @param {Entry} e
 */
function totals(e) {
  let size = 0;
  let sent = 0;
  for (const k in e.files || {}) for (const f of /** @type {FileItem[]} */ ((e.files || {})[k])) {
    size += f.size;
    sent += f.done ? f.size : f.offset || 0;
  }
  return { size, sent };
}

/**
 * Sends every file of an entry that the server does not have whole yet,
 * then writes their references into the entry's data. Resolves with what
 * the client does next: {done} (submit now), {wait} (a transient answer:
 * try again after wait ms, 0 for the client's own backoff), or {end}
 * (a definitive refusal). A network failure rejects, as the transport
 * does; the client retries with backoff, and the next try asks the server
 * for the offset again.
 * @param {UploadContext} c
 * @param {Entry} e
 * @returns {Promise<UploadStep>}
 */
export async function upload(c, e) {
  const files = e.files || {};
  for (const field in files) {
    for (const f of files[field]) {
      if (f.done) continue;
      const step = await one(c, e, field, f);
      if (!step.done) return step;
    }
  }
  for (const field in files) {
    const refs = files[field].map((f) => 'upload:' + f.id);
    // A list was given as a list (submit() left [] in its place).
    e.data[field] = Array.isArray(e.data[field]) ? refs : refs[0];
  }
  e.ready = true;
  await c.save(e);
  return { done: true };
}

/**
 * Forgets the uploads of an entry's files (the server answered the
 * submission with upload-not-found: they expired before it came): the
 * next try makes them again from the kept files.
 * @param {Entry} e
 */
export function restart(e) {
  e.ready = false;
  for (const field in e.files || {}) {
    if (!Array.isArray(e.data[field])) delete e.data[field];
    else e.data[field] = [];
    for (const f of (e.files || {})[field]) f.url = f.id = f.offset = f.done = undefined;
  }
}

/**
 * @param {UploadContext} c
 * @param {Entry} e
 * @param {string} field
 * @param {FileItem} f
 * @returns {Promise<UploadStep>}
 */
async function one(c, e, field, f) {
  if (!f.path && !(typeof Blob == 'function' && f.blob instanceof Blob)) return { end: ['failed', { problem: { code: 'upload-file-lost', detail: 'the file is no longer on this device' } }] };
  // A file path needs the platform's file access: miniProgram() from
  // miniprogram.js (@formd/sdk's main entry) gives it.
  if (f.path && !c.read) return { end: ['failed', { problem: { code: 'upload-no-file-access', detail: "use miniProgram() from '@formd/sdk/miniprogram.js' to upload files in a mini-program" } }] };
  const read = c.read || readBlob;
  const tus = { 'Tus-Resumable': TUS };
  let solves = 0;
  for (let again = 0; ; again++) {
    if (!f.url) {
      // A form that asks for a proof-of-work asks before each upload
      // too: a solution of its own, in the metadata.
      const altcha = c.solve && c.solve.wants(e.url) ? await c.solve.take(e.url) : '';
      const r = await c.send({
        method: 'POST',
        url: uploadsURL(e.url),
        headers: { ...tus, 'Upload-Length': String(f.size), 'Upload-Metadata': metadata({ field, filename: f.name || '', filetype: f.type || '', altcha }) },
      });
      const code = r.body && r.body.code;
      if (c.solve && (code === 'challenge-required' || code === 'challenge-invalid') && solves++ < 3) {
        c.solve.need(e.url);
        again--;
        continue;
      }
      if (r.status !== 201) return transient(r.status) ? { wait: c.retryAfter(r), problem: r.body || undefined } : refused(field, r);
      const loc = r.header('Location');
      if (!loc) return { end: ['failed', { problem: { code: 'upload-refused', detail: 'no Location in the answer' } }] };
      f.url = resolve(loc, e.url);
      f.id = f.url.slice(f.url.lastIndexOf('/') + 1);
      f.offset = 0;
      // The address is on the device before a byte is sent: a reload
      // resumes this upload rather than making another.
      await c.save(e);
    } else {
      const r = await c.send({ method: 'HEAD', url: f.url, headers: tus });
      if (r.status === 404 || r.status === 410) {
        // Expired or unknown: made again from the kept file (at most a
        // few times, so that a server that forgets at once cannot keep
        // the client busy for ever).
        if (again > 2) return refused(field, r);
        f.url = f.id = undefined;
        continue;
      }
      if (r.status !== 200 && r.status !== 204) return transient(r.status) ? { wait: c.retryAfter(r), problem: r.body || undefined } : refused(field, r);
      f.offset = Number(r.header('Upload-Offset')) || 0;
    }
    c.progress(totals(e));
    while (/** @type {number} */ (f.offset) < f.size) {
      const at = /** @type {number} */ (f.offset);
      const chunk = await read(f, at, Math.min(f.size, at + c.chunk));
      const r = await c.send({
        method: 'PATCH',
        url: /** @type {string} */ (f.url),
        headers: { ...tus, 'Upload-Offset': String(at), 'Content-Type': 'application/offset+octet-stream' },
        body: chunk,
      });
      if (r.status === 409) {
        // Not where the server stands (an earlier PATCH landed after
        // all): ask again.
        const h = await c.send({ method: 'HEAD', url: /** @type {string} */ (f.url), headers: tus });
        if (h.status !== 200 && h.status !== 204) return { wait: c.retryAfter(h) };
        f.offset = Number(h.header('Upload-Offset')) || 0;
        continue;
      }
      if (r.status === 404 || r.status === 410) {
        if (again > 2) return refused(field, r);
        f.url = f.id = undefined;
        break;
      }
      if (r.status !== 204 && r.status !== 200) return transient(r.status) ? { wait: c.retryAfter(r), problem: r.body || undefined } : refused(field, r);
      f.offset = Number(r.header('Upload-Offset')) || at;
      c.progress(totals(e));
    }
    if (!f.url) continue;
    f.done = true;
    await c.save(e);
    return { done: true };
  }
}

/**
 * Reads a chunk of a kept file: a Blob's slice in browsers.
 * @param {FileItem} f
 * @param {number} start
 * @param {number} end
 * @returns {Promise<Blob | ArrayBuffer>}
 */
export async function readBlob(f, start, end) {
  return /** @type {Blob} */ (f.blob).slice(start, end);
}

/**
 * File access for WeChat and uni-app: chunks read with the file system
 * manager, and a chosen file (a temporary path, which the platform may
 * delete once the app is closed) copied under the user data path so that
 * the outbox still has it at the next launch.
 * @param {MiniProgramFiles} api
 */
export function miniProgramFiles(api) {
  const fs = api.getFileSystemManager();
  return {
    /** @param {FileItem} f @param {number} start @param {number} end @returns {Promise<ArrayBuffer>} */
    read: (f, start, end) =>
      new Promise((res, rej) =>
        fs.readFile({
          filePath: /** @type {string} */ (f.path),
          position: start,
          length: end - start,
          success: (r) => res(/** @type {ArrayBuffer} */ (r.data)),
          fail: (err) => rej(Object.assign(new Error((err && err.errMsg) || 'readFile failed'), { timeout: false })),
        }),
      ),
    /**
     * @param {FileItem} f
     * @param {string} key the entry's key, which names the copy
     * @returns {FileItem}
     */
    keep(f, key) {
      const dir = api.env && api.env.USER_DATA_PATH;
      if (!dir || !f.path) return f;
      const dest = `${dir}/formd-${key}-${Math.floor(Math.random() * 1e9)}${(/\.[A-Za-z0-9]{1,8}$/.exec(f.path) || [''])[0]}`;
      try {
        fs.copyFileSync(f.path, dest);
        return { ...f, path: dest };
      } catch {
        // Over the user data quota: the temporary file still serves this
        // launch.
        return f;
      }
    },
    /** @param {FileItem} f */
    drop(f) {
      const dir = api.env && api.env.USER_DATA_PATH;
      if (dir && f.path && f.path.startsWith(dir + '/formd-')) {
        try {
          fs.unlinkSync(f.path);
        } catch {}
      }
    },
  };
}
