// Pages (DESIGN §5): the hosted page's steps. Without JavaScript a form
// with pages is one page with a heading per step; with this module it
// shows one step at a time, with its progress, Back and Next. Next checks
// the step's fields before going on (the browser's constraint checks,
// which mirror the server's; a field not shown is disabled by
// conditions.js and not checked). What was typed is kept on the device
// (localStorage) as it is typed, with the step, so a reload comes back to
// it; it is forgotten once the submission is received. The server's
// answer is still what counts: an error it reports on an earlier step's
// field takes the person back to that step.

const SKIP = /^(submit|button|reset|image|file|hidden|password)$/;

/**
 * @param {HTMLFormElement} form
 * @returns {HTMLInputElement[]}
 */
function controls(form) {
  return /** @type {HTMLInputElement[]} */ (Array.from(form.elements)).filter((x) => x.name && !x.name.startsWith('_') && !SKIP.test(x.type));
}

/**
 * The values typed so far, by field name.
 * @param {HTMLFormElement} form
 */
function read(form) {
  /** @type {Record<string, string | boolean | string[]>} */
  const d = {};
  for (const x of controls(form)) {
    if (x.type === 'checkbox' && (x.value === 'true' || x.value === 'on')) d[x.name] = x.checked;
    else if (x.type === 'checkbox' || x.type === 'radio') {
      const l = /** @type {string[]} */ (d[x.name] || []);
      if (x.checked) l.push(x.value);
      d[x.name] = l;
    } else d[x.name] = x.value;
  }
  return d;
}

/**
 * @param {HTMLFormElement} form
 * @param {Record<string, unknown>} d
 */
function write(form, d) {
  for (const x of controls(form)) {
    if (!(x.name in d)) continue;
    const v = d[x.name];
    if (x.type === 'checkbox' && (x.value === 'true' || x.value === 'on')) x.checked = v === true;
    else if (x.type === 'checkbox' || x.type === 'radio') x.checked = Array.isArray(v) && v.includes(x.value);
    else if (typeof v === 'string') x.value = v;
  }
}

/**
 * Shows a form's steps (section.step) one at a time.
 * @param {HTMLFormElement} form
 * @param {Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> | undefined} [storage]
 * @returns {{show: (i: number) => void, next: () => boolean, current: () => number} | undefined}
 */
export function bindSteps(form, storage = globalThis.localStorage) {
  const steps = /** @type {HTMLElement[]} */ (Array.from(form.querySelectorAll('section.step')));
  if (steps.length < 2) return undefined;
  const doc = form.ownerDocument;
  const key = 'formd-steps:' + (form.getAttribute('data-formd') || '');
  const progress = doc.createElement('p');
  progress.className = 'progress';
  progress.setAttribute('role', 'status');
  progress.setAttribute('aria-live', 'polite');
  steps[0].before(progress);
  const nav = doc.createElement('div');
  nav.className = 'steps-nav';
  const button = (/** @type {string} */ text, /** @type {string} */ cls) => {
    const b = doc.createElement('button');
    b.type = 'button';
    b.className = cls;
    b.textContent = text;
    nav.append(b);
    return b;
  };
  const back = button(form.dataset.stepBack || 'Back', 'secondary');
  const next = button(form.dataset.stepNext || 'Next', '');
  steps[steps.length - 1].after(nav);
  const submit = /** @type {HTMLButtonElement | null} */ (form.querySelector('button[type=submit]'));
  let cur = 0;
  const save = () => {
    try {
      storage?.setItem(key, JSON.stringify({ step: cur, values: read(form) }));
    } catch {
      // A full or forbidden storage keeps nothing: the page still works.
    }
  };
  const show = (/** @type {number} */ i) => {
    cur = Math.max(0, Math.min(i, steps.length - 1));
    steps.forEach((s, j) => {
      s.hidden = j !== cur;
    });
    back.hidden = cur === 0;
    next.hidden = cur === steps.length - 1;
    if (submit) submit.hidden = cur !== steps.length - 1;
    const title = steps[cur].querySelector('h2')?.textContent || '';
    progress.textContent = (form.dataset.stepProgress || 'Step %d of %d').replace('%d', String(cur + 1)).replace('%d', String(steps.length)) + (title ? ': ' + title : '');
  };
  const goNext = () => {
    for (const x of steps[cur].querySelectorAll('input,select,textarea')) {
      const el = /** @type {HTMLInputElement} */ (x);
      if (el.willValidate && !el.checkValidity()) {
        el.reportValidity();
        el.focus();
        return false;
      }
    }
    show(cur + 1);
    save();
    steps[cur].querySelector('h2')?.setAttribute('tabindex', '-1');
    /** @type {HTMLElement | null} */ (steps[cur].querySelector('h2'))?.focus();
    return true;
  };
  back.addEventListener('click', () => {
    show(cur - 1);
    save();
  });
  next.addEventListener('click', goNext);
  // Enter in a field of an earlier step is Next, not a submission.
  form.addEventListener('submit', (e) => {
    if (cur !== steps.length - 1) {
      e.preventDefault();
      e.stopImmediatePropagation();
      goNext();
    }
  }, true);
  form.addEventListener('input', save);
  form.addEventListener('change', save);
  // The server found a field to fix: show its step.
  form.addEventListener('formd:invalid', () => {
    const bad = form.querySelector('[aria-invalid=true]');
    const i = steps.findIndex((s) => bad && s.contains(bad));
    if (i >= 0) show(i);
  });
  for (const t of ['formd:received', 'formd:waitlisted']) form.addEventListener(t, () => storage?.removeItem(key));
  let saved = null;
  try {
    saved = JSON.parse(storage?.getItem(key) || 'null');
  } catch {
    saved = null;
  }
  if (saved && typeof saved === 'object') {
    write(form, saved.values || {});
    // Conditions (conditions.js) follow the values brought back.
    const Ev = doc.defaultView?.Event || Event;
    form.dispatchEvent(new Ev('change', { bubbles: true }));
    show(Number(saved.step) || 0);
  } else show(0);
  return { show, next: goNext, current: () => cur };
}

// The hosted page loads this module beside formd.js: bind its form.
if (typeof document !== 'undefined' && document.querySelectorAll) {
  for (const f of document.querySelectorAll('form[data-formd-steps]')) bindSteps(/** @type {HTMLFormElement} */ (f));
}
