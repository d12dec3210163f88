// Options with places of their own (places.js, issue 32): the public
// definition's places read into the options a page or a mini-program
// shows, marked as the hosted page marks them; the mini-program adapters
// (the fake wx and uni, typed by the platforms' own typings) read the
// definition through their transport; a page's own select is marked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { optionPlaces, loadPlaces, markPlaces, miniProgram } from '../miniprogram.js';
import { fakeWx } from './fake-wx.js';
import { fakeUni } from './fake-uni.js';

// GET /v1/forms/fair as formd answers it (intake/public.go), the morning
// full, the afternoon with one place, the evening without a limit.
const fair = (waitlist) => ({
  id: 'fair',
  fields: [
    { name: 'name', type: 'text' },
    {
      name: 'session', type: 'select', options: [
        { value: 'am', label: { en: 'Morning', zh: '上午' }, capacity: 40 },
        { value: 'pm', label: { en: 'Afternoon', zh: '下午' }, capacity: 40 },
        { value: 'eve', label: { en: 'Evening', zh: '晚上' } },
      ],
    },
  ],
  places: {
    field: 'session', waitlist, options: [
      { value: 'am', limit: 40, left: 0, full: true },
      { value: 'pm', limit: 40, left: 1, full: false },
      { value: 'eve', full: false },
    ],
  },
});

test('a full option is marked as the hosted page marks it, in each language', () => {
  const en = optionPlaces(fair(true), 'en');
  assert.equal(en.field, 'session');
  assert.deepEqual(en.options.map((o) => [o.value, o.label, o.full, o.disabled, o.left]), [
    ['am', 'Morning — full, waitlist', true, false, 0],
    ['pm', 'Afternoon', false, false, 1],
    ['eve', 'Evening', false, false, undefined],
  ]);
  assert.deepEqual(optionPlaces(fair(true), 'zh_CN').options.map((o) => o.label), ['上午（已满，可候补）', '下午', '晚上']);
  // A form that turns people away: full, and not to be chosen.
  const reject = optionPlaces(fair(false), 'zh-CN').options[0];
  assert.deepEqual([reject.label, reject.disabled], ['上午（已满）', true]);
  assert.equal(optionPlaces({ id: 'plain', fields: [{ name: 'x', type: 'text' }] }), undefined, 'no places, nothing to mark');
});

for (const [name, make] of Object.entries({ wx: fakeWx, uni: fakeUni })) {
  test(`${name}: the adapter reads the definition's places through its transport`, async () => {
    const api = make({ answer: () => ({ statusCode: 200, header: { 'Content-Type': 'application/json' }, data: JSON.stringify(fair(true)) }) });
    const places = await loadPlaces(miniProgram(api).transport, 'https://formd.test/', 'fair', 'zh_CN');
    assert.equal(api.fake.requests[0].url, 'https://formd.test/v1/forms/fair');
    assert.equal(api.fake.requests[0].method, 'GET');
    assert.deepEqual(places.options.map((o) => o.label), ['上午（已满，可候补）', '下午', '晚上']);
  });

  test(`${name}: a form that is not there is an error, not an empty list`, async () => {
    const api = make({ answer: () => ({ statusCode: 404, header: { 'Content-Type': 'application/problem+json' }, data: '{"code":"form-not-found"}' }) });
    await assert.rejects(loadPlaces(miniProgram(api).transport, 'https://formd.test', 'gone'), /HTTP 404/);
  });
}

test('a page\'s own select is marked, and marked again from a newer definition', async () => {
  const { JSDOM } = await import('jsdom');
  const dom = new JSDOM(`<html lang="en"><form><select name="session"><option value="am">Morning</option><option value="pm">Afternoon</option><option value="eve">Evening</option></select></form></html>`);
  const form = dom.window.document.querySelector('form');
  markPlaces(form, fair(false));
  const opts = Array.from(form.querySelectorAll('option'));
  assert.deepEqual(opts.map((o) => [o.textContent, o.disabled]), [['Morning — full', true], ['Afternoon', false], ['Evening', false]]);
  const later = fair(false);
  later.places.options[0] = { value: 'am', limit: 40, left: 2, full: false };
  later.places.options[1] = { value: 'pm', limit: 40, left: 0, full: true };
  markPlaces(form, later);
  assert.deepEqual(opts.map((o) => [o.textContent, o.disabled]), [['Morning', false], ['Afternoon — full', true], ['Evening', false]]);
});
