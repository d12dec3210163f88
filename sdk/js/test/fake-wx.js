// @ts-check
// A fake of the wx APIs the SDK uses, typed by WeChat's official
// miniprogram-api-typings (checked by `tsc -p tsconfig.wx.json`): each
// result it hands to a callback is built as the real type requires, so the
// fake cannot drift from the real API without failing the build.
import { platform } from './fake-platform.js';

/**
 * @typedef {Pick<WechatMiniprogram.Wx, 'request' | 'getStorageSync' | 'setStorageSync' | 'onNetworkStatusChange' | 'offNetworkStatusChange' | 'onAppShow' | 'offAppShow' | 'getAppBaseInfo' | 'getSystemInfoSync'>} WxUsed
 */

/** @returns {WechatMiniprogram.RequestTask} */
const task = () => ({
  abort() {},
  onHeadersReceived() {},
  offHeadersReceived() {},
  onChunkReceived() {},
  offChunkReceived() {},
});

/** @type {WechatMiniprogram.RequestProfile} */
const profile = {
  SSLconnectionEnd: 0, SSLconnectionStart: 0, connectEnd: 0, connectStart: 0, domainLookUpEnd: 0, domainLookUpStart: 0,
  downstreamThroughputKbpsEstimate: 0, estimate_nettype: 0, fetchStart: 0, httpDNSDomainLookUpEnd: 0, httpDNSDomainLookUpStart: 0,
  httpRttEstimate: 0, invokeStart: 0, peerIP: '127.0.0.1', port: 443, protocol: 'h2', queueEnd: 0, queueStart: 0,
  receivedBytedCount: 0, redirectEnd: 0, redirectStart: 0, requestEnd: 0, requestStart: 0, responseEnd: 0, responseStart: 0,
  rtt: 0, sendBytesCount: 0, socketReused: false, throughputKbps: 0, transportRttEstimate: 0, usingHighPerformanceMode: false,
};

/**
 * @param {Parameters<typeof platform>[0]} o
 * @returns {WxUsed & {fake: ReturnType<typeof platform>, online: (networkType?: WechatMiniprogram.OnNetworkStatusChangeListenerResult['networkType']) => void, offline: () => void, show: () => void}}
 */
export function fakeWx(o) {
  const p = platform(o);
  /** @type {WxUsed} */
  const wx = {
    request: (opt) => {
      p.request(
        opt,
        (a) => {
          /** @type {WechatMiniprogram.RequestSuccessCallbackResult<any>} */
          const r = { ...a, cookies: [], exception: { retryCount: 0, reasons: [] }, profile, useHttpDNS: false, errMsg: 'request:ok' };
          return r;
        },
        (errMsg) => {
          /** @type {WechatMiniprogram.RequestFailCallbackErr} */
          const e = { errMsg, errno: 600001, exception: { retryCount: 0, reasons: [] }, useHttpDNS: false };
          return e;
        },
      );
      return task();
    },
    getStorageSync: (k) => p.get(k),
    setStorageSync: (k, v) => p.set(k, v),
    onNetworkStatusChange: (cb) => void p.net.add(cb),
    offNetworkStatusChange: (cb) => void (cb && p.net.delete(cb)),
    onAppShow: (cb) => void p.shows.add(cb),
    offAppShow: (cb) => void (cb && p.shows.delete(cb)),
    getAppBaseInfo: () => ({
      PCKernelVersion: '', SDKVersion: '3.7.0', enableDebug: false, fontSizeScaleFactor: 1, fontSizeSetting: 16,
      host: { appId: 'wx0000000000000000' }, language: p.language, version: '8.0.50', theme: 'light',
    }),
    // Deprecated by WeChat; the SDK asks getAppBaseInfo where it exists.
    getSystemInfoSync: () => /** @type {WechatMiniprogram.SystemInfo} */ (/** @type {unknown} */ ({ language: p.language })),
  };
  return {
    ...wx,
    fake: p,
    online: (networkType = 'wifi') => p.net.forEach((cb) => cb({ isConnected: true, networkType })),
    offline: () => p.net.forEach((cb) => cb({ isConnected: false, networkType: 'none' })),
    show: () => {
      /** @type {WechatMiniprogram.App.LaunchShowOption} */
      const opt = { path: 'pages/register/index', query: {}, scene: 1001, shareTicket: '', referrerInfo: { appId: '', extraData: {} }, forwardMaterials: [], chatType: 1, apiCategory: 'default' };
      p.shows.forEach((cb) => cb(opt));
    },
  };
}
