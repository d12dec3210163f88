import type { Entry, Problem, Transport } from './formd.js';

/** A proof-of-work challenge as formd issues it (ALTCHA v1). */
export interface Challenge {
  algorithm: string;
  challenge: string;
  maxnumber: number;
  salt: string;
  signature: string;
}

export interface SolverOptions {
  transport: Transport;
  /** false: never use a Web Worker (solve in timer slices). */
  worker?: boolean;
  timeout?: number;
  setTimeout?: (f: () => void, ms: number) => unknown;
  now?: () => number;
  /** Numbers tried per slice when solving on the page's own thread. */
  slice?: number;
}

/** The client's proof-of-work (createClient's `challenge` option). */
export interface Solver {
  /** The form (its submissions URL) wants a solution: start solving now. */
  prepare(url: string): void;
  /** Says, at once, whether attach has work for the entry. */
  wants(e: Entry): boolean;
  /** Puts a solution in the entry if its form wants one and it has none. */
  attach(e: Entry): Promise<boolean>;
  /** After a challenge-required or challenge-invalid answer: a fresh solution, at most three times an entry. */
  retry(e: Entry, p: Problem | undefined): Promise<boolean>;
  /** Says the form (its submissions URL) is known to want solutions. */
  needs?(url: string): boolean;
  /** A solution for one more request to the form (an upload's creation), and the next solving started. */
  take?(url: string): Promise<string>;
}

export const FIELD: 'altcha';
export function challengeSolver(o: SolverOptions): Solver;
export function solveSliced(c: Challenge, o?: { setTimeout?: (f: () => void, ms: number) => unknown; slice?: number; now?: () => number }): Promise<{ number: number; took: number }>;
export function solveInWorker(c: Challenge, o?: { now?: () => number }): Promise<{ number: number; took: number }>;
export function encodeSolution(c: Challenge, s: { number: number; took: number }): string;
export function watchWidget(el: HTMLFormElement): () => Promise<void>;
