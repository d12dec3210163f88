// Conditions (show_if): which fields of a form are shown, from the answers
// to earlier fields. The same rule as the server's (internal/form/
// conditions.go), run on the same vectors (internal/form/testdata/
// conditions.json) by test/conditions.test.js, so the page and the server
// cannot drift; the server's answer is the one that counts.
//
// Answers are lists of strings: a single value is one string (trimmed; an
// empty one is no answer), a multiselect its choices, a checked checkbox
// "true" and an unchecked one no answer, a number its digits. A field not
// shown is no answer for the fields after it, whatever it holds.

const DECIMAL = /^-?[0-9]+(\.[0-9]+)?$/;

/**
 * @param {string[]} vals
 * @param {string} want
 */
function hasValue(vals, want) {
  return vals.some((v) => v === want || (DECIMAL.test(v) && DECIMAL.test(want) && Number(v) === Number(want)));
}

/**
 * An answer for conditions from a value as formd takes it.
 * @param {unknown} v
 * @returns {string[]}
 */
export function answerOf(v) {
  if (v === null || v === undefined || v === false) return [];
  if (v === true) return ['true'];
  if (Array.isArray(v)) return v.flatMap(answerOf);
  const s = String(v).trim();
  return s === '' ? [] : [s];
}

/**
 * Whether a condition holds on the answers.
 * @param {import('./conditions.d.ts').Condition} c
 * @param {(field: string) => string[]} answer
 * @returns {boolean}
 */
export function holds(c, answer) {
  if (c.all) return c.all.every((x) => holds(x, answer));
  if (c.any) return c.any.some((x) => holds(x, answer));
  const vals = answer(c.field || '');
  if (c.equals !== undefined) return hasValue(vals, String(c.equals));
  if (c.not !== undefined) return !hasValue(vals, String(c.not));
  if (c.in) return c.in.some((v) => hasValue(vals, String(v)));
  if (c.answered !== undefined) return (vals.length > 0) === c.answered;
  return true;
}

/**
 * The fields shown, evaluated in field order.
 * @param {{name: string, show_if?: import('./conditions.d.ts').Condition}[]} fields
 * @param {(field: string) => string[]} answer
 * @returns {Set<string>}
 */
export function shown(fields, answer) {
  const on = new Set();
  const visible = (/** @type {string} */ name) => (on.has(name) ? answer(name) : []);
  for (const f of fields) if (!f.show_if || holds(f.show_if, visible)) on.add(f.name);
  return on;
}

/**
 * Shows and hides a page's fields as it is filled in: each field's
 * wrapper is marked data-field="NAME", the form carries the fields with
 * their show_if as JSON in data-formd-conditions. A hidden field's
 * controls are disabled, so they are neither checked nor sent (the
 * server would ignore them); they keep what was typed, for when the field
 * shows again.
 * @param {HTMLFormElement} form
 * @returns {() => void} applies the conditions again (also on every input)
 */
export function bindConditions(form) {
  const fields = JSON.parse(form.getAttribute('data-formd-conditions') || '[]');
  const answer = (/** @type {string} */ name) => {
    const els = /** @type {HTMLInputElement[]} */ (Array.from(form.elements)).filter((x) => x.name === name);
    /** @type {unknown[]} */
    const vals = [];
    for (const x of els) {
      if (x.type === 'checkbox') {
        if (x.value === 'true' || x.value === 'on') vals.push(x.checked);
        else if (x.checked) vals.push(x.value);
      } else if (x.type === 'radio') {
        if (x.checked) vals.push(x.value);
      } else if (x.type !== 'file') vals.push(x.value);
    }
    return answerOf(vals);
  };
  const apply = () => {
    const on = shown(fields, answer);
    for (const f of fields) {
      const wrap = form.querySelector(`[data-field="${CSS.escape(f.name)}"]`);
      if (!wrap) continue;
      const show = on.has(f.name);
      /** @type {HTMLElement} */ (wrap).hidden = !show;
      for (const x of wrap.querySelectorAll('input,select,textarea')) /** @type {HTMLInputElement} */ (x).disabled = !show;
    }
  };
  form.addEventListener('input', apply);
  form.addEventListener('change', apply);
  apply();
  return apply;
}

// The hosted page loads this module beside formd.js: bind its form.
if (typeof document !== 'undefined' && document.querySelectorAll) {
  for (const f of document.querySelectorAll('form[data-formd-conditions]')) bindConditions(/** @type {HTMLFormElement} */ (f));
}
