// Types of miniprogram.js: formd.js and messages.js in one entry.
export * from './formd.js';
export * from './messages.js';
