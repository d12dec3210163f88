// @ts-check
// The exam registration page with a photo (issue 20): 选择照片 opens
// wx.chooseMedia; the submission carries the chosen file as it is
// (tempFilePath and size), and the SDK keeps it under the user data path,
// uploads it in chunks over wx.request (POST with X-HTTP-Method-Override:
// PATCH), resumes where it stopped when the app comes back from the
// background (onAppShow), and only then submits. The page shows
// 上传中… 40% with a progress bar, then 已收到.
import { messages, fieldText } from '@formd/sdk';
import { PHOTO_FORM_ID } from '../../config.js';

/** @typedef {import('@formd/sdk').StateEvent} StateEvent */
/** @typedef {import('@formd/sdk').Client} Client */

const WORDS = {
  zh: { title: '考试报名', name: '姓名', photo: '照片', choose: '选择照片', submit: '提交', note: '请上传近期免冠照片（JPEG 或 PNG）。' },
  en: { title: 'Exam registration', name: 'Name', photo: 'Photo', choose: 'Choose a photo', submit: 'Submit', note: 'A recent photo of your face (JPEG or PNG).' },
};

/** Listener removers, by page instance. @type {WeakMap<object, () => void>} */
const offs = new WeakMap();
/** The chosen file, by page instance (not page data: it is not for the view). @type {WeakMap<object, WechatMiniprogram.MediaFile>} */
const files = new WeakMap();

/** @returns {Client} */
const client = () => getApp().formd;

Component({
  data: {
    words: WORDS.zh,
    values: { name: '' },
    chosen: '',
    state: 'idle',
    progress: 0,
    message: '',
    /** @type {Record<string, string>} */
    errors: {},
  },
  methods: {
    onLoad() {
      const c = client();
      this.setData({ words: c.lang === 'zh' ? WORDS.zh : WORDS.en });
      offs.set(this, c.on((ev) => ev.form === PHOTO_FORM_ID && this.show(ev)));
    },
    onShow() {
      client().flush();
    },
    onUnload() {
      const off = offs.get(this);
      if (off) off();
    },
    /** @param {WechatMiniprogram.Input} e */
    onInput(e) {
      const field = /** @type {string} */ (e.currentTarget.dataset.field);
      this.setData({ ['values.' + field]: e.detail.value });
    },
    onChoose() {
      wx.chooseMedia({
        count: 1,
        mediaType: ['image'],
        sizeType: ['compressed'],
        success: (r) => {
          const f = r.tempFiles[0];
          files.set(this, f);
          this.setData({ chosen: `${(f.size / 1024).toFixed(0)} KB`, 'errors.photo': '' });
        },
      });
    },
    onSubmit() {
      const photo = files.get(this);
      client().submit(PHOTO_FORM_ID, photo ? { ...this.data.values, photo } : { ...this.data.values });
    },
    /** @param {StateEvent} ev */
    show(ev) {
      const t = messages(client().lang);
      /** @type {Record<string, string>} */
      const errors = {};
      for (const fe of ev.errors || []) {
        const label = /** @type {Record<string, string>} */ (this.data.words)[fe.field] || fe.field;
        errors[fe.field] = fieldText(t['err-' + fe.code] || '{label}: ' + fe.message, fe, label);
      }
      // An upload problem (storage full, a file lost) has its own text.
      const code = ev.problem && ev.problem.code;
      const more = code && t['code-' + code] ? ' ' + t['code-' + code] : '';
      const progress = ev.progress || 0;
      this.setData({ state: ev.state, progress, message: t['msg-' + ev.state].replace('{percent}', String(progress)) + more, errors });
    },
  },
});
