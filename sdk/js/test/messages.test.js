// The texts (issue 12): every state and every field error code of the SDK
// has a text in English and in Chinese, listed here one by one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MESSAGES, messages } from '../messages.js';
import { fieldText, language } from '../formd.js';

const STATES = ['idle', 'sending', 'uploading', 'saved', 'unsaved', 'received', 'waitlisted', 'duplicate', 'invalid', 'closed', 'full', 'failed'];
const CODES = [
  'required', 'invalid-value', 'invalid-email', 'invalid-phone', 'invalid-option', 'invalid-date', 'not-a-number', 'not-an-integer',
  'too-small', 'too-large', 'too-short', 'too-long', 'too-early', 'too-late', 'too-few', 'too-many', 'pattern', 'unknown-field',
  'file-rejected', 'file-too-large',
];
const PROBLEMS = ['file-rejected', 'payload-too-large', 'upload-already-used', 'upload-not-found', 'upload-offset-mismatch', 'upload-unavailable', 'upload-storage-full', 'scan-unavailable', 'file-infected', 'upload-file-lost', 'origin-not-allowed'];
const PARTICIPANT = ['draft-not-found', 'draft-exists', 'draft-version-mismatch', 'draft-submitted', 'drafts-disabled', 'entry-link-not-found',
  'entry-version-mismatch', 'if-match-required', 'edit-closed', 'entry-not-live'];
const LIMITED = ['too-small', 'too-large', 'too-short', 'too-long', 'too-early', 'too-late', 'too-few', 'too-many'];

/** The members of a string-literal union in formd.d.ts. */
function union(name) {
  const dts = readFileSync(new URL('../formd.d.ts', import.meta.url), 'utf8');
  const m = new RegExp(`export type ${name} =([^;]*);`).exec(dts);
  return [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
}

test('the lists here are the ones formd.d.ts declares', () => {
  assert.deepEqual(union('State'), STATES);
  assert.deepEqual(union('FieldErrorCode'), CODES);
  assert.deepEqual(union('UploadProblemCode'), PROBLEMS);
  assert.deepEqual(union('ParticipantProblemCode'), PARTICIPANT);
});

for (const lang of ['en', 'zh']) {
  test(`${lang}: a text for every state`, () => {
    for (const s of STATES) {
      const t = MESSAGES[lang]['msg-' + s];
      assert.equal(typeof t, 'string', `msg-${s}`);
      if (s !== 'idle') assert.ok(t.length > 0, `msg-${s} is empty`);
    }
  });

  test(`${lang}: a text for every field error code, the bound named where there is one`, () => {
    for (const c of CODES) {
      const t = MESSAGES[lang]['err-' + c];
      assert.ok(t, `err-${c}`);
      assert.equal(t.includes('{limit}'), LIMITED.includes(c), `err-${c}: {limit} only where the server sends one`);
      if (LIMITED.includes(c)) assert.match(t, /\[[^\]]*\{limit\}[^\]]*\]/, `err-${c}: the bound in [brackets]`);
    }
  });

  test(`${lang}: a text for every upload problem code, and the progress in the uploading state`, () => {
    for (const c of PROBLEMS) assert.ok(MESSAGES[lang]['code-' + c], `code-${c}`);
    assert.match(MESSAGES[lang]['msg-uploading'], /\{percent\}/);
  });

  test(`${lang}: a text for every problem code of drafts and the participant's link`, () => {
    for (const c of PARTICIPANT) assert.ok(MESSAGES[lang]['code-' + c], `code-${c}`);
  });

  test(`${lang}: nothing more than the states and codes`, () => {
    const want = [...STATES.map((s) => 'msg-' + s), ...CODES.map((c) => 'err-' + c), ...PROBLEMS.map((c) => 'code-' + c), ...PARTICIPANT.map((c) => 'code-' + c)].sort();
    assert.deepEqual(Object.keys(MESSAGES[lang]).sort(), want);
  });
}

test('the Chinese texts are Chinese, with the words of issue 12 for the states', () => {
  const zh = MESSAGES.zh;
  for (const [s, w] of [['sending', '发送中'], ['saved', '已保存在本机'], ['unsaved', '未能保存在本机'], ['received', '已收到'], ['waitlisted', '已在候补名单'], ['duplicate', '已报名'], ['full', '已满'], ['invalid', '需要修改']]) {
    assert.ok(zh['msg-' + s].includes(w), `msg-${s}: ${zh['msg-' + s]} lacks ${w}`);
  }
  for (const [k, t] of Object.entries(zh)) if (t) assert.match(t, /\p{Script=Han}/u, k);
});

test('messages() picks Chinese for any Chinese tag', () => {
  for (const tag of ['zh', 'zh_CN', 'zh-CN', 'zh-Hans', 'ZH-tw']) assert.equal(messages(tag), MESSAGES.zh, tag);
  for (const tag of ['en', 'en_US', 'fr', '', undefined]) assert.equal(messages(tag), MESSAGES.en, String(tag));
});

test('language() reads a tag, else the page', () => {
  assert.equal(language('zh_CN'), 'zh');
  assert.equal(language('en-GB'), 'en');
  // node has a navigator whose language is the process's.
  assert.ok(['zh', 'en'].includes(language()));
});

test('fieldText fills the label and the bound, and leaves the bound out when the server sent none', () => {
  const fe = { field: 'name', code: 'too-long', message: 'must be at most 100 characters', limit: '100' };
  assert.equal(fieldText(MESSAGES.zh['err-too-long'], fe), '内容太长，最多 100 个字符。');
  assert.equal(fieldText(MESSAGES.en['err-too-long'], fe, 'Name'), 'Name is too long: at most 100 characters');
  const old = { field: 'name', code: 'too-long', message: 'must be at most 100 characters' };
  assert.equal(fieldText(MESSAGES.zh['err-too-long'], old), '内容太长。');
  assert.equal(fieldText(MESSAGES.en['err-too-long'], old, 'Name'), 'Name is too long');
  assert.equal(fieldText(MESSAGES.en['err-unknown-field'], { field: 'nickname', code: 'unknown-field', message: '' }), 'nickname is not a field of this form');
  assert.equal(fieldText(MESSAGES.zh['err-too-late'], { field: 'day', code: 'too-late', message: '', limit: '2027-03-10' }), '日期太晚，不能晚于 2027-03-10。');
  // $ patterns in a label or a bound are text, not replacement patterns.
  assert.equal(fieldText('{label}: {limit}', { field: 'x', code: 'too-small', message: '', limit: "$'" }, '$&'), "$&: $'");
});
