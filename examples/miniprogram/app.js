// @ts-check
// One formd client for the whole app, made at launch: entries that an
// earlier run left in the outbox (wx storage) are sent at once, and again
// whenever the network comes back (onNetworkStatusChange) or the app comes
// to the foreground (onAppShow).
// Drafts (a form with drafts: true) are saved and resumed, and a form's
// public definition (its sessions' places, its conditions) read, over the
// same adapter's requests.
import { createClient, miniProgram, drafts } from '@formd/sdk';
import { FORMD_ENDPOINT } from './config.js';

/** @typedef {{formd: import('@formd/sdk').Client, drafts: import('@formd/sdk').Drafts, transport: import('@formd/sdk').Transport}} Globals */

App({
  formd: /** @type {import('@formd/sdk').Client} */ (/** @type {unknown} */ (null)),
  drafts: /** @type {import('@formd/sdk').Drafts} */ (/** @type {unknown} */ (null)),
  transport: /** @type {import('@formd/sdk').Transport} */ (/** @type {unknown} */ (null)),
  onLaunch() {
    const adapter = miniProgram(wx);
    this.formd = createClient({ endpoint: FORMD_ENDPOINT, ...adapter });
    this.drafts = drafts({ endpoint: FORMD_ENDPOINT, transport: adapter.transport });
    this.transport = adapter.transport;
  },
});
