// @ts-check
// The registration page. It shows every state of the submission in the
// person's language (Chinese on a Chinese phone): 发送中 / 已保存在本机 /
// 未能保存在本机 / 已收到 / 已在候补名单 / 已报名 / 已满 / 需要修改 / 未开放 /
// 无法提交, with each field's error next to it. A page built with
// Component(), as WeChat allows, so that miniprogram-simulate can test it.
import { messages, fieldText } from '@formd/sdk';
import { FORM_ID } from '../../config.js';

/** @typedef {import('@formd/sdk').StateEvent} StateEvent */
/** @typedef {import('@formd/sdk').Client} Client */

/** The page's own words, beside the SDK's texts. */
const WORDS = {
  zh: { title: '春季集市报名', name: '姓名', phone: '手机号', submit: '提交', note: '每个手机号只能报名一次。' },
  en: { title: 'Spring fair registration', name: 'Name', phone: 'Mobile phone', submit: 'Submit', note: 'One registration per mobile phone.' },
};

/** Listener removers, by page instance. @type {WeakMap<object, () => void>} */
const offs = new WeakMap();

/** @returns {Client} */
const client = () => getApp().formd;

Component({
  data: {
    words: WORDS.zh,
    values: { name: '', phone: '' },
    state: 'idle',
    message: '',
    /** @type {Record<string, string>} */
    errors: {},
  },
  methods: {
    onLoad() {
      const c = client();
      this.setData({ words: c.lang === 'zh' ? WORDS.zh : WORDS.en });
      offs.set(this, c.on((ev) => ev.form === FORM_ID && this.show(ev)));
    },
    // Back on the page (from another page, or the app from the
    // background): send what is waiting now, and say that it is waiting.
    async onShow() {
      const c = client();
      c.flush();
      const waiting = (await c.pending()).some((e) => e.form === FORM_ID);
      if (waiting && this.data.state === 'idle') this.show({ state: 'saved', form: FORM_ID, key: '' });
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
    onSubmit() {
      // A second press while it is on its way, or after the answer with
      // nothing changed, is the same submission: the SDK shows its result.
      client().submit(FORM_ID, { ...this.data.values });
    },
    /** @param {StateEvent} ev */
    show(ev) {
      const t = messages(client().lang);
      /** @type {Record<string, string>} */
      const errors = {};
      let extra = '';
      for (const fe of ev.errors || []) {
        const label = /** @type {Record<string, string>} */ (this.data.words)[fe.field] || fe.field;
        const text = fieldText(t['err-' + fe.code] || '{label}: ' + fe.message, fe, label);
        if (fe.field in this.data.values) errors[fe.field] = text;
        else extra += ' ' + text;
      }
      this.setData({ state: ev.state, message: t['msg-' + ev.state] + extra, errors });
    },
  },
});
