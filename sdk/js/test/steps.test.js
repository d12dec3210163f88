// Pages (steps.js): one step at a time, Next checks the step, what was
// typed comes back after a reload (a new page on the same storage), and
// is forgotten once the submission is received.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindSteps } from '../steps.js';

const PAGE = `<form data-formd="app" data-step-next="Next" data-step-back="Back" data-step-progress="Step %d of %d">
<section class="step"><h2>You</h2><input name="name" required></section>
<section class="step"><h2>School</h2><input name="class"><input type="checkbox" name="agree" value="true"></section>
<section class="step"><h2>Essay</h2><textarea name="essay"></textarea></section>
<div class="actions"><button type="submit">Submit</button></div></form>`;

function memoryStorage() {
  const m = new Map();
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)), removeItem: (k) => m.delete(k), m };
}

async function page(storage) {
  const { JSDOM } = await import('jsdom');
  const dom = new JSDOM(PAGE);
  const form = dom.window.document.querySelector('form');
  const steps = bindSteps(form, storage);
  return { dom, form, steps, sections: Array.from(form.querySelectorAll('section.step')) };
}

test('one step at a time, Next checks the step', async () => {
  const { form, steps, sections } = await page(memoryStorage());
  assert.deepEqual(sections.map((s) => s.hidden), [false, true, true]);
  assert.equal(form.querySelector('.progress').textContent, 'Step 1 of 3: You');
  assert.equal(form.querySelector('button[type=submit]').hidden, true);
  assert.equal(steps.next(), false, 'the required name is empty');
  assert.equal(steps.current(), 0);
  form.querySelector('[name=name]').value = 'Ann';
  assert.equal(steps.next(), true);
  assert.deepEqual(sections.map((s) => s.hidden), [true, false, true]);
  assert.equal(form.querySelector('.progress').textContent, 'Step 2 of 3: School');
  steps.next();
  assert.equal(form.querySelector('button[type=submit]').hidden, false, 'the last step sends');
});

test('a reload comes back to the step and what was typed; a received submission forgets it', async () => {
  const storage = memoryStorage();
  const first = await page(storage);
  first.form.querySelector('[name=name]').value = 'Ann';
  first.steps.next();
  first.form.querySelector('[name=class]').value = '3B';
  first.form.querySelector('[name=agree]').checked = true;
  first.form.dispatchEvent(new first.dom.window.Event('input', { bubbles: true }));
  const again = await page(storage);
  assert.equal(again.steps.current(), 1);
  assert.equal(again.form.querySelector('[name=name]').value, 'Ann');
  assert.equal(again.form.querySelector('[name=class]').value, '3B');
  assert.equal(again.form.querySelector('[name=agree]').checked, true);
  again.form.dispatchEvent(new again.dom.window.CustomEvent('formd:received', { bubbles: true }));
  assert.equal(storage.m.size, 0);
});
