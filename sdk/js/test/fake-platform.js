// The behaviour shared by the fake wx and the fake uni (fake-wx.js,
// fake-uni.js), each of which gives it the official types of its platform:
// storage that keeps JSON copies, returns '' for a missing key and throws
// past its quota (10 MB, as WeChat's); request() that answers later,
// through success or fail, as the platforms do; and the network and
// app-show events, fired by the test.

/** WeChat's storage limit for one mini-program and user. */
export const TEN_MB = 10 * 1024 * 1024;

/**
 * What a test makes a request meet: an HTTP answer, or a failure as the
 * platform reports it (errMsg): 'timeout', 'offline', 'domain' (the host is
 * not in the legal request domains).
 * @typedef {{statusCode: number, header?: Record<string, string>, data?: string} | {fail: 'timeout' | 'offline' | 'domain'}} Answer
 */

/** The errMsg each platform failure carries (WeChat's wording). */
export const FAIL = {
  timeout: 'request:fail timeout',
  offline: 'request:fail errcode:-2 cronet_error_code:-2 error_msg:net::ERR_INTERNET_DISCONNECTED',
  domain: 'request:fail url not in domain list',
};

/**
 * @param {{answer: (o: any, n: number) => Answer | Promise<Answer>, quota?: number, language?: string}} o
 */
export function platform({ answer, quota = TEN_MB, language = 'zh_CN' }) {
  /** @type {Map<string, string>} */
  const store = new Map();
  /** @type {any[]} */
  const requests = [];
  /** @type {string[]} */
  const log = [];
  /** @type {Set<(res: any) => void>} */
  const net = new Set();
  /** @type {Set<(res: any) => void>} */
  const shows = new Set();
  const used = () => [...store].reduce((n, [k, v]) => n + k.length + v.length, 0);
  return {
    store,
    requests,
    log,
    net,
    shows,
    language,
    used,
    /**
     * @param {any} o the request options
     * @param {(a: {statusCode: number, header: Record<string, string>, data: string}) => any} ok
     * @param {(errMsg: string) => any} fail
     */
    request(o, ok, fail) {
      requests.push(o);
      log.push(`request ${o.method} ${o.url}`);
      const n = requests.length;
      // Answered on a later turn, never inside request() (node's setImmediate).
      /** @type {any} */ (globalThis).setImmediate(async () => {
        const a = await answer(o, n);
        if ('fail' in a) o.fail && o.fail(fail(FAIL[a.fail]));
        else o.success && o.success(ok({ statusCode: a.statusCode, header: a.header || {}, data: a.data ?? '' }));
      });
    },
    /** @param {string} k */
    get: (k) => (store.has(k) ? JSON.parse(/** @type {string} */ (store.get(k))) : ''),
    /** @param {string} k @param {unknown} v */
    set(k, v) {
      const s = JSON.stringify(v);
      const before = store.get(k);
      store.set(k, s);
      if (used() > quota) {
        if (before === undefined) store.delete(k);
        else store.set(k, before);
        log.push('setStorageSync failed');
        throw new Error('setStorageSync:fail exceed storage max size 10M');
      }
      log.push('setStorageSync');
    },
  };
}
