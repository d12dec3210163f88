// @ts-check
// The registration page. It shows every state of the submission in the
// person's language (Chinese on a Chinese phone): 发送中 / 已保存在本机 /
// 未能保存在本机 / 已收到 / 已在候补名单 / 已报名 / 已满 / 需要修改 / 未开放 /
// 无法提交, with each field's error next to it. A page built with
// Component(), as WeChat allows, so that miniprogram-simulate can test it.
//
// Beside its own name and phone, it shows the other fields of the form's
// public definition (read once over the adapter's requests): a select as
// radio buttons, its full sessions marked as the hosted page marks them
// (下午（已满，可候补）/ "Afternoon — full, waitlist", places.js), and a
// field with show_if only while its condition holds (conditions.js, the
// server's rule): a field not shown keeps what was typed but is not sent.
// Without the definition (offline at first launch) it takes name and
// phone, and the server's answer names what is missing.
import { messages, fieldText, newKey, DraftError, loadDefinition, optionPlaces, textIn, shown, answerOf } from '@formd/sdk';
import { FORMD_ENDPOINT, FORM_ID } from '../../config.js';

/** @typedef {import('@formd/sdk').StateEvent} StateEvent */
/** @typedef {import('@formd/sdk').Client} Client */
/** @typedef {import('@formd/sdk').Draft} Draft */
/** @typedef {import('@formd/sdk').PublicDefinition} PublicDefinition */
/** @typedef {{value: string, label: string, full: boolean, disabled: boolean}} Choice */
/** @typedef {{name: string, type: string, label: string, shown: boolean, options?: Choice[]}} Extra */

/** The page's own fields; the definition's other fields follow them. */
const OWN = ['name', 'phone'];
/** The types of the definition's fields the page can show. */
const SHOWN_TYPES = ['text', 'email', 'phone', 'number', 'date', 'select'];

/** The page's own words, beside the SDK's texts. */
const WORDS = {
  zh: {
    title: '春季集市报名', name: '姓名', phone: '手机号', submit: '提交', note: '每个手机号只能报名一次。', saveDraft: '保存草稿',
    saving: '正在保存草稿…', saved: '草稿已保存：可在任何设备上用此链接继续填写：', failed: '草稿未保存：请检查网络后重试。',
    conflict: '此草稿已在其他设备上修改，这里的内容没有覆盖它：请重新打开草稿链接。', resumed: '草稿已打开。', gone: '此草稿链接无法打开：可能已过期或已提交。',
  },
  en: {
    title: 'Spring fair registration', name: 'Name', phone: 'Mobile phone', submit: 'Submit', note: 'One registration per mobile phone.', saveDraft: 'Save draft',
    saving: 'Saving the draft…', saved: 'Draft saved: finish it on any device with this link:', failed: 'Draft not saved: check the network and try again.',
    conflict: 'This draft was changed on another device; nothing here was saved over it: open the draft link again.', resumed: 'Your draft is open.', gone: 'This draft link opens nothing: it expired or was sent.',
  },
};

/** The draft of each page instance, once saved or resumed. @type {WeakMap<object, Draft>} */
const kept = new WeakMap();

/** Listener removers, by page instance. @type {WeakMap<object, () => void>} */
const offs = new WeakMap();

/** The public definition of each page instance, once read. @type {WeakMap<object, PublicDefinition>} */
const defs = new WeakMap();

/** @returns {Client} */
const client = () => getApp().formd;

Component({
  data: {
    words: WORDS.zh,
    /** @type {Record<string, string>} */
    values: { name: '', phone: '' },
    /** The definition's other fields, as shown. @type {Extra[]} */
    fields: [],
    state: 'idle',
    message: '',
    /** @type {Record<string, string>} */
    errors: {},
    draftMessage: '',
    draftLink: '',
  },
  methods: {
    /** @param {{resume?: string}} [query] a draft's resume token (the link the hosted page or another device gave) */
    onLoad(query) {
      const c = client();
      this.setData({ words: c.lang === 'zh' ? WORDS.zh : WORDS.en });
      offs.set(this, c.on((ev) => ev.form === FORM_ID && this.show(ev)));
      loadDefinition(getApp().transport, FORMD_ENDPOINT, FORM_ID).then(
        (def) => {
          defs.set(this, def);
          this.showFields();
        },
        () => {},
      );
      if (query && query.resume) {
        getApp().drafts.resume(FORM_ID, decodeURIComponent(query.resume)).then(
          /** @param {Draft} d */
          (d) => {
            kept.set(this, d);
            /** @type {Record<string, string>} */
            const values = { name: '', phone: '' };
            for (const [k, v] of Object.entries(d.data || {})) values[k] = String(v ?? '');
            this.setData({ values, draftMessage: this.data.words.resumed, draftLink: d.resumeURL || '' });
            this.showFields();
          },
          () => this.setData({ draftMessage: this.data.words.gone }),
        );
      }
    },
    // Saved on the server: said only once the server answered 2xx.
    async onSaveDraft() {
      const w = this.data.words;
      const d = kept.get(this) || { form: FORM_ID, key: newKey(), token: '', version: 0 };
      this.setData({ draftMessage: w.saving });
      try {
        const saved = await getApp().drafts.save(d, { ...this.data.values });
        kept.set(this, saved);
        this.setData({ draftMessage: w.saved, draftLink: saved.resumeURL || '' });
      } catch (err) {
        this.setData({ draftMessage: err instanceof DraftError && err.code === 'draft-version-mismatch' ? w.conflict : w.failed });
      }
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
    /** An input's text or a radio group's choice. @param {WechatMiniprogram.Input | WechatMiniprogram.RadioGroupChange} e */
    onInput(e) {
      const field = /** @type {string} */ (e.currentTarget.dataset.field);
      this.setData({ ['values.' + field]: e.detail.value });
      this.showFields();
    },
    /** The fields shown now (all of them without a definition). @returns {Set<string> | undefined} */
    shownNow() {
      const def = defs.get(this);
      const values = this.data.values;
      return def && shown(def.fields || [], (f) => answerOf(values[f]));
    },
    // The definition's other fields, each shown or not by its show_if on
    // the answers so far, a session's options marked full.
    showFields() {
      const def = defs.get(this);
      const on = this.shownNow();
      if (!def || !on) return;
      const lang = client().lang;
      const pl = optionPlaces(def, lang);
      /** @type {Extra[]} */
      const fields = (def.fields || [])
        .filter((f) => !OWN.includes(f.name) && SHOWN_TYPES.includes(f.type || ''))
        .map((f) => ({
          name: f.name,
          type: f.type || 'text',
          label: textIn(f.label, lang) || f.name,
          shown: on.has(f.name),
          options: f.type !== 'select' ? undefined : pl && pl.field === f.name ? pl.options : (f.options || []).map((o) => {
            const value = typeof o === 'string' ? o : o.value;
            return { value, label: (typeof o !== 'string' && textIn(o.label, lang)) || value, full: false, disabled: false };
          }),
        }));
      this.setData({ fields });
    },
    onSubmit() {
      // A second press while it is on its way, or after the answer with
      // nothing changed, is the same submission: the SDK shows its result.
      // A saved draft is sent under its key: the submission consumes it.
      // A field not shown is not sent (the server would ignore it), nor
      // an empty answer to one of the definition's fields.
      const d = kept.get(this);
      const on = this.shownNow();
      /** @type {Record<string, string>} */
      const data = {};
      for (const [k, v] of Object.entries(this.data.values)) {
        if (OWN.includes(k) || (on && on.has(k) && v !== '')) data[k] = v;
      }
      client().submit(FORM_ID, data, { key: d && d.key });
    },
    /** @param {StateEvent} ev */
    show(ev) {
      const t = messages(client().lang);
      /** @type {Record<string, string>} */
      const errors = {};
      let extra = '';
      for (const fe of ev.errors || []) {
        const other = this.data.fields.find((f) => f.name === fe.field && f.shown);
        const label = /** @type {Record<string, string>} */ (this.data.words)[fe.field] || (other && other.label) || fe.field;
        const text = fieldText(t['err-' + fe.code] || '{label}: ' + fe.message, fe, label);
        if (OWN.includes(fe.field) || other) errors[fe.field] = text;
        else extra += ' ' + text;
      }
      this.setData({ state: ev.state, message: t['msg-' + ev.state] + extra, errors });
    },
  },
});
