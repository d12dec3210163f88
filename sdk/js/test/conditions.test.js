// Conditions (show_if): the page's evaluator on the vectors the server's
// tests run too (internal/form/testdata/conditions.json), so the two
// cannot drift; and the hosted page's binding in a DOM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { shown, answerOf, bindConditions } from '../conditions.js';

const vectors = JSON.parse(readFileSync(new URL('../../../internal/form/testdata/conditions.json', import.meta.url), 'utf8'));

test('the shared vectors are all there', () => {
  assert.ok(vectors.cases.length >= 20, `${vectors.cases.length} vectors`);
});

for (const c of vectors.cases) {
  test(`vector: ${c.name}`, () => {
    const on = shown(c.fields, (name) => answerOf(c.values[name]));
    assert.deepEqual(c.fields.map((f) => f.name).filter((n) => on.has(n)), c.shown);
  });
}

test('the hosted page hides and disables a field not shown, and shows it again', async () => {
  const { JSDOM } = await import('jsdom');
  const dom = new JSDOM(`<form data-formd-conditions='[{"name":"age_group"},{"name":"guardian_phone","show_if":{"field":"age_group","equals":"minor"}}]'>
    <div data-field="age_group"><select name="age_group"><option value="">-</option><option value="adult">adult</option><option value="minor">minor</option></select></div>
    <div data-field="guardian_phone"><input name="guardian_phone" value="138"></div></form>`);
  const g = /** @type {any} */ (globalThis);
  g.CSS = g.CSS || { escape: (/** @type {string} */ s) => s };
  const form = dom.window.document.querySelector('form');
  const apply = bindConditions(form);
  const wrap = form.querySelector('[data-field="guardian_phone"]');
  const input = form.querySelector('[name="guardian_phone"]');
  assert.equal(wrap.hidden, true);
  assert.equal(input.disabled, true);
  form.querySelector('select').value = 'minor';
  apply();
  assert.equal(wrap.hidden, false);
  assert.equal(input.disabled, false);
  assert.equal(input.value, '138', 'what was typed is kept');
});
