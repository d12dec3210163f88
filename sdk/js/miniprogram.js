// @ts-check
/**
 * The entry for mini-program npm builds (WeChat developer tools build
 * `main` and what it imports into miniprogram_npm/@formd/sdk, and nothing
 * else of the package): the SDK and its English and Chinese texts in one.
 * @module formd/miniprogram
 */
export * from './formd.js';
export * from './messages.js';
