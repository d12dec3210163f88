/** Shows a hosted page's steps (section.step) one at a time. */
export function bindSteps(
  form: HTMLFormElement,
  storage?: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>,
): { show: (i: number) => void; next: () => boolean; current: () => number } | undefined;
