/** A field's show_if: one test on an earlier field, or all/any of several. */
export interface Condition {
  field?: string;
  equals?: string;
  in?: string[];
  not?: string;
  answered?: boolean;
  all?: Condition[];
  any?: Condition[];
}
/** An answer for conditions from a value as formd takes it. */
export function answerOf(v: unknown): string[];
/** Whether a condition holds on the answers. */
export function holds(c: Condition, answer: (field: string) => string[]): boolean;
/** The fields shown, evaluated in field order. */
export function shown(fields: { name: string; show_if?: Condition }[], answer: (field: string) => string[]): Set<string>;
/** Shows and hides a hosted page's fields as it is filled in. */
export function bindConditions(form: HTMLFormElement): () => void;
