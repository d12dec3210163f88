// @ts-check
// One formd client for the whole app, made at launch: entries that an
// earlier run left in the outbox (wx storage) are sent at once, and again
// whenever the network comes back (onNetworkStatusChange) or the app comes
// to the foreground (onAppShow).
import { createClient, miniProgram } from '@formd/sdk';
import { FORMD_ENDPOINT } from './config.js';

/** @typedef {{formd: import('@formd/sdk').Client}} Globals */

App({
  formd: /** @type {import('@formd/sdk').Client} */ (/** @type {unknown} */ (null)),
  onLaunch() {
    this.formd = createClient({ endpoint: FORMD_ENDPOINT, ...miniProgram(wx) });
  },
});
