// A small formd for drafts, shared by the drafts API's tests and the
// WeChat example's (miniprogram-simulate).

/**
 * A small formd for drafts as DESIGN §4 words them: versions, a token
 * kept by its holder, 412 with the current version; a submission under a
 * draft's key consumes it.
 */
export function draftServer() {
  /** @type {Map<string, {token: string, version: number, data: any}>} */
  const byKey = new Map();
  /** @type {Map<string, any>} */
  const submitted = new Map();
  let n = 0;
  const json = (statusCode, body, header = {}) => ({ statusCode, header: { 'Content-Type': 'application/json', ...header }, data: JSON.stringify(body) });
  return {
    byKey,
    submitted,
    /** @param {any} o */
    answer: (o) => {
      const h = Object.fromEntries(Object.entries(o.header || {}).map(([k, v]) => [k.toLowerCase(), String(v)]));
      const m = /\/v1\/forms\/([^/]+)\/(drafts|submissions)(?:\/([^/?]+))?/.exec(o.url);
      if (!m) return json(404, { code: 'not-found' });
      const [, form, kind, rawKey] = m;
      if (kind === 'submissions') {
        if (o.url.endsWith('/arrivals')) return json(202, {});
        const key = h['idempotency-key'];
        byKey.delete(key);
        submitted.set(key, JSON.parse(o.data));
        return json(201, { id: 'sub_1', form, key, status: 'stored', received_at: '2027-03-01T09:00:00Z', receipt: 'ab', manage: '/e/tok' });
      }
      if (o.method === 'GET') {
        for (const [key, d] of byKey) if (d.token === h['draft-token']) return json(200, { form, key, version: d.version, data: d.data }, { ETag: `"${d.version}"` });
        return json(404, { code: 'draft-not-found' });
      }
      const key = decodeURIComponent(rawKey);
      if (submitted.has(key)) return json(409, { code: 'draft-submitted', entry_status: 'stored' });
      const d = byKey.get(key);
      if (!h['draft-token']) {
        if (d) return json(409, { code: 'draft-exists' });
        const token = 'tok-' + ++n;
        byKey.set(key, { token, version: 1, data: JSON.parse(o.data) });
        return json(201, { form, key, version: 1, resume: token }, { ETag: '"1"' });
      }
      if (!d || d.token !== h['draft-token']) return json(404, { code: 'draft-not-found' });
      if (h['if-match'] !== `"${d.version}"`) return json(412, { code: 'draft-version-mismatch', version: d.version }, { ETag: `"${d.version}"` });
      d.version++;
      d.data = JSON.parse(o.data);
      return json(200, { form, key, version: d.version }, { ETag: `"${d.version}"` });
    },
  };
}
