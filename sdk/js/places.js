// @ts-check
/**
 * Options with places of their own (issue 32): a fair's morning and
 * afternoon sessions, each with its places and its waitlist. The public
 * definition (GET /v1/forms/{form}) says in `places` which options of the
 * session field are full; this module turns that into the options a page
 * or a mini-program shows, marked as the hosted page marks them: "full —
 * waitlist" beside a full option of a form that waitlists, "full" (and
 * not to be chosen) on one that turns people away. It is only a display:
 * the server decides each submission's place in its transaction.
 * @module formd/places
 */

/** The hosted page's words (internal/hosted/lang.go), [waitlist, full]. */
const FULL = {
  en: ['%s — full, waitlist', '%s — full'],
  zh: ['%s（已满，可候补）', '%s（已满）'],
};

/** @param {string | undefined} lang */
const isZh = (lang) => /^zh/i.test(lang || '');

/**
 * A definition's text (a string, or {en, zh}) in lang: a field's label,
 * an option's.
 * @param {unknown} t
 * @param {string | undefined} lang
 * @returns {string}
 */
export function textIn(t, lang) {
  if (t == null) return '';
  if (typeof t === 'string') return t;
  const m = /** @type {Record<string, string>} */ (t);
  return (isZh(lang) ? m.zh : m.en) ?? m[''] ?? m.en ?? m.zh ?? Object.values(m)[0] ?? '';
}

/**
 * An option's label, marked when the option is full.
 * @param {string} label
 * @param {boolean} full
 * @param {boolean} waitlist the form waitlists (when_full: waitlist)
 * @param {string} [lang] en or zh (zh_CN, zh-CN…)
 * @returns {string}
 */
export function fullLabel(label, full, waitlist, lang) {
  return full ? FULL[isZh(lang) ? 'zh' : 'en'][waitlist ? 0 : 1].replace('%s', label) : label;
}

/**
 * The session field's options with their places, from a public
 * definition; undefined for a form whose options have no places.
 * @param {import('./places.js').PublicDefinition} def
 * @param {string} [lang]
 * @returns {import('./places.js').Places | undefined}
 */
export function optionPlaces(def, lang) {
  const p = def && def.places;
  if (!p) return undefined;
  const field = (def.fields || []).find((f) => f.name === p.field);
  const by = new Map(p.options.map((o) => [o.value, o]));
  const options = ((field && field.options) || []).map((o) => {
    const value = typeof o === 'string' ? o : o.value;
    const pl = by.get(value);
    const full = !!(pl && pl.full);
    return {
      value,
      label: fullLabel(textIn(typeof o === 'string' ? o : o.label, lang) || value, full, p.waitlist, lang),
      full,
      disabled: full && !p.waitlist,
      left: pl && pl.left,
      limit: pl && pl.limit,
    };
  });
  return { field: p.field, waitlist: p.waitlist, options };
}

/**
 * Reads a form's public definition (GET /v1/forms/{form}) through a
 * transport (the browser's fetchTransport, a mini-program adapter's):
 * its fields with their show_if for conditions.js, its places for
 * optionPlaces.
 * @param {import('./formd.js').Transport} transport
 * @param {string} endpoint formd's address, such as https://forms.example.org
 * @param {string} form
 * @returns {Promise<import('./places.js').PublicDefinition>}
 */
export async function loadDefinition(transport, endpoint, form) {
  const url = `${endpoint.replace(/\/+$/, '')}/v1/forms/${encodeURIComponent(form)}`;
  const r = await transport({ method: 'GET', url, headers: { Accept: 'application/json' }, timeout: 15000 });
  if (r.status !== 200 || !r.body) throw new Error(`formd: the definition of ${form}: HTTP ${r.status}`);
  return /** @type {import('./places.js').PublicDefinition} */ (r.body);
}

/**
 * Reads a form's public definition through a transport and gives its
 * options with their places.
 * @param {import('./formd.js').Transport} transport
 * @param {string} endpoint
 * @param {string} form
 * @param {string} [lang]
 */
export async function loadPlaces(transport, endpoint, form, lang) {
  return optionPlaces(await loadDefinition(transport, endpoint, form), lang);
}

/**
 * Marks the full options of a page's own form (a custom front-end's
 * select): each option's text as the hosted page shows it, and a full
 * option disabled where the form turns people away. It can be called
 * again with a newer definition (the original texts are kept).
 * @param {HTMLFormElement} form
 * @param {import('./places.js').PublicDefinition} def
 * @param {string} [lang] the page's language by default
 */
export function markPlaces(form, def, lang = form.ownerDocument.documentElement.lang) {
  const pl = optionPlaces(def, lang);
  const sel = pl && /** @type {HTMLSelectElement | null} */ (form.querySelector(`select[name="${pl.field}"]`));
  if (!pl || !sel) return pl;
  for (const o of Array.from(sel.options)) {
    const p = pl.options.find((x) => x.value === o.value);
    if (!p) continue;
    const base = o.dataset.label ?? (o.dataset.label = o.textContent || p.value);
    o.textContent = fullLabel(base, p.full, pl.waitlist, lang);
    o.disabled = p.disabled;
  }
  return pl;
}
