// @ts-check
// The app's one formd client, made at launch (App.vue onLaunch): entries an
// earlier run left in the outbox (uni storage) are sent at once, and again
// when the network comes back or the app comes to the foreground.
import { createClient, miniProgram } from '@formd/sdk';
import { messages } from '@formd/sdk/messages.js';

// The host must be a legal request domain of each mini-program platform
// the app is built for (for WeChat: 小程序管理后台 → 开发管理 → 开发设置 →
// 服务器域名 → request 合法域名), HTTPS.
export const FORMD_ENDPOINT = 'https://forms.example.org';
export const FORM_ID = 'spring-fair-2027';

/** @type {import('@formd/sdk').Client | undefined} */
let shared;

/** The client, made on first use. */
export function formd() {
  return (shared = shared || createClient({ endpoint: FORMD_ENDPOINT, ...miniProgram(uni) }));
}

/** The SDK's texts in the phone's language (Chinese on a Chinese phone). */
export function texts() {
  return messages(formd().lang);
}
