// Types of messages.js: the SDK's texts in English and Chinese.

/** Texts by "msg-STATE" and "err-CODE"; field error texts are templates for fieldText(). */
export const MESSAGES: Record<'en' | 'zh', Record<string, string>>;
/** The texts for a language tag: Chinese for any "zh…" tag, else English. */
export function messages(lang?: string): Record<string, string>;
