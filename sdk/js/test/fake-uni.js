// @ts-check
// A fake of the uni APIs the SDK uses, typed by uni-app's official
// @dcloudio/types (checked by `tsc -p tsconfig.uni.json`), with the same
// behaviour as the fake wx (fake-platform.js).
import { platform } from './fake-platform.js';

/**
 * @typedef {Pick<UniNamespace.Uni, 'request' | 'getStorageSync' | 'setStorageSync' | 'onNetworkStatusChange' | 'offNetworkStatusChange' | 'onAppShow' | 'offAppShow' | 'getAppBaseInfo' | 'getSystemInfoSync'>} UniUsed
 */

/**
 * @param {Parameters<typeof platform>[0]} o
 * @returns {UniUsed & {fake: ReturnType<typeof platform>, online: (networkType?: string) => void, offline: () => void, show: () => void}}
 */
export function fakeUni(o) {
  const p = platform(o);
  /** @type {UniUsed} */
  const uni = {
    request: (/** @type {UniNamespace.RequestOptions} */ opt) => {
      p.request(
        opt,
        (a) => {
          /** @type {UniNamespace.RequestSuccessCallbackResult} */
          const r = { ...a, cookies: [] };
          return r;
        },
        (errMsg) => {
          /** @type {UniNamespace.GeneralCallbackResult} */
          const e = { errMsg };
          return e;
        },
      );
      /** @type {UniNamespace.RequestTask} */
      const task = { abort() {}, onHeadersReceived() {}, offHeadersReceived() {} };
      return task;
    },
    getStorageSync: (k) => p.get(k),
    setStorageSync: (k, v) => p.set(k, v),
    onNetworkStatusChange: (cb) => void p.net.add(cb),
    offNetworkStatusChange: (cb) => void p.net.delete(cb),
    onAppShow: (cb) => void p.shows.add(cb),
    offAppShow: (cb) => void (cb && p.shows.delete(cb)),
    getAppBaseInfo: () => ({
      language: p.language, appId: '__UNI__0000000', appName: 'formd example', appVersion: '1.0.0', appVersionCode: '100',
      version: '8.0.50', SDKVersion: '3.7.0', enableDebug: false,
    }),
    getSystemInfoSync: () => /** @type {UniNamespace.GetSystemInfoResult} */ (/** @type {unknown} */ ({ language: p.language })),
  };
  return {
    ...uni,
    fake: p,
    online: (networkType = 'wifi') => p.net.forEach((cb) => cb({ isConnected: true, networkType })),
    offline: () => p.net.forEach((cb) => cb({ isConnected: false, networkType: 'none' })),
    show: () => {
      /** @type {UniNamespace.LaunchOptionsApp} */
      const opt = /** @type {any} */ ({ path: 'pages/register/register', query: {}, scene: 1001 });
      p.shows.forEach((cb) => cb(opt));
    },
  };
}
