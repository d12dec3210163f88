// @ts-check
/**
 * The SDK's texts for people, in English and Simplified Chinese: one per
 * state ("msg-STATE"), one per field error code ("err-CODE") and one per
 * upload problem code ("code-CODE", shown after the state's text). A module
 * of its own, so that formd.js stays within its size budget for pages
 * that bring their own texts (the hosted page passes them as data-msg-*
 * and data-err-* attributes); no imports, so it loads next to any copy of
 * formd.js.
 *
 * Field error texts are templates for fieldText() in formd.js: {label} is
 * the field's label, {limit} the bound the server names, and a part in
 * [brackets] is kept only when the error carries that bound.
 *
 * @module formd/messages
 */

/** @type {Record<'en' | 'zh', Record<string, string>>} */
export const MESSAGES = {
  en: {
    'msg-idle': '',
    'msg-sending': 'Sending…',
    'msg-saved': 'Saved on this device. It will be sent as soon as the connection allows; you can leave this page.',
    'msg-unsaved': 'Not saved on this device: keep this page open until it is sent.',
    'msg-received': 'Received. Thank you!',
    'msg-waitlisted': 'Received: you are on the waitlist.',
    'msg-duplicate': 'You are already registered.',
    'msg-invalid': 'Please correct the marked fields.',
    'msg-closed': 'This form is not taking submissions now.',
    'msg-full': 'Sorry, every place is taken.',
    'msg-failed': 'The form could not be sent.',
    'err-required': '{label} is required',
    'err-invalid-value': '{label} is not a valid value',
    'err-invalid-email': '{label} is not a valid e-mail address',
    'err-invalid-phone': '{label} is not a valid phone number',
    'err-invalid-option': '{label}: please choose one of the options',
    'err-invalid-date': '{label} must be a date written YYYY-MM-DD',
    'err-not-a-number': '{label} must be a number',
    'err-not-an-integer': '{label} must be a whole number',
    'err-too-small': '{label} is too small[: at least {limit}]',
    'err-too-large': '{label} is too large[: at most {limit}]',
    'err-too-short': '{label} is too short[: at least {limit} characters]',
    'err-too-long': '{label} is too long[: at most {limit} characters]',
    'err-too-early': '{label} is too early[: {limit} or later]',
    'err-too-late': '{label} is too late[: {limit} or earlier]',
    'err-too-few': '{label}: too few chosen[, choose at least {limit}]',
    'err-too-many': '{label}: too many chosen[, choose at most {limit}]',
    'err-pattern': '{label} does not have the expected format',
    'err-unknown-field': '{label} is not a field of this form',
    // Files (uploads.js): the state while their bytes go, the field
    // errors the client makes of a refused file, and the server's problem
    // codes about uploads, shown after the state's text.
    'msg-uploading': 'Uploading… {percent} %',
    'err-file-rejected': '{label}: this type of file is not accepted',
    'err-file-too-large': '{label}: the file is too large',
    'code-file-rejected': 'The form does not accept this type of file (the type is found from the bytes, not the name).',
    'code-payload-too-large': 'The file is larger than this form accepts.',
    'code-upload-already-used': 'A file of this submission was already sent with another one: choose the file again.',
    'code-upload-not-found': 'The uploaded file is no longer on the server: choose the file again.',
    'code-upload-offset-mismatch': 'The upload continues from where the server stands.',
    'code-upload-unavailable': 'The server cannot store files right now: they stay on this device and are sent again shortly.',
    'code-upload-file-lost': 'The file is no longer on this device: choose it again.',
    'code-upload-storage-full': 'The server has no room for files right now: they stay on this device and are sent again shortly.',
    'code-scan-unavailable': 'The file cannot be checked for viruses right now: it is sent again shortly.',
    'code-file-infected': 'The virus scanner found something in this file, and it was not kept: choose another file.',
    'code-origin-not-allowed': 'This site may not send to this form.',
    // Drafts and the participant's link (issue 33).
    'code-draft-not-found': 'This saved draft is no longer there (it expired or was erased): start again.',
    'code-draft-exists': 'A draft is already saved for this submission: open it with its resume link.',
    'code-draft-version-mismatch': 'This draft was changed in another tab or on another device: the newer version is loaded.',
    'code-draft-submitted': 'This form was already sent: the draft is no longer needed.',
    'code-drafts-disabled': 'This form does not save drafts.',
    'code-entry-link-not-found': 'This registration link is not valid: it may be mistyped or revoked.',
    'code-entry-version-mismatch': 'Your registration was changed elsewhere (another tab or device): load it again, then make your change.',
    'code-if-match-required': 'Your change could not be saved: reload your registration and make it again.',
    'code-edit-closed': 'Changes are closed: nothing was changed.',
    'code-entry-not-live': 'Nothing was changed: this registration is not active (it is cancelled, declined or not yet accepted).',
  },
  zh: {
    'msg-idle': '',
    'msg-sending': '发送中…',
    'msg-saved': '已保存在本机：网络恢复后会自动发送，下次打开时也会继续发送。',
    'msg-unsaved': '未能保存在本机：请保持此页面打开，直到发送完成。',
    'msg-received': '已收到，谢谢！',
    'msg-waitlisted': '已收到：您已在候补名单中。',
    'msg-duplicate': '您已报名，无需重复提交。',
    'msg-invalid': '需要修改：请修改标出的内容。',
    'msg-closed': '此表单当前不接受提交。',
    'msg-full': '抱歉，名额已满。',
    'msg-failed': '表单无法提交。',
    'err-required': '此项必填。',
    'err-invalid-value': '内容无效。',
    'err-invalid-email': '请填写有效的电子邮箱。',
    'err-invalid-phone': '请填写有效的电话号码。',
    'err-invalid-option': '请从选项中选择。',
    'err-invalid-date': '请按 年-月-日 填写日期。',
    'err-not-a-number': '请填写数字。',
    'err-not-an-integer': '请填写整数。',
    'err-too-small': '数值太小[，最小为 {limit}]。',
    'err-too-large': '数值太大[，最大为 {limit}]。',
    'err-too-short': '内容太短[，至少 {limit} 个字符]。',
    'err-too-long': '内容太长[，最多 {limit} 个字符]。',
    'err-too-early': '日期太早[，不能早于 {limit}]。',
    'err-too-late': '日期太晚[，不能晚于 {limit}]。',
    'err-too-few': '选择的项目太少[，至少选 {limit} 项]。',
    'err-too-many': '选择的项目太多[，最多选 {limit} 项]。',
    'err-pattern': '格式不正确。',
    'err-unknown-field': '此表单没有这一项。',
    'msg-uploading': '上传中… {percent}%',
    'err-file-rejected': '不接受这种类型的文件。',
    'err-file-too-large': '文件太大。',
    'code-file-rejected': '此表单不接受这种类型的文件（类型按文件内容判断，而不是文件名）。',
    'code-payload-too-large': '文件超过此表单允许的大小。',
    'code-upload-already-used': '此提交中的文件已随另一份提交发送：请重新选择文件。',
    'code-upload-not-found': '服务器上已没有上传的文件：请重新选择文件。',
    'code-upload-offset-mismatch': '上传将从服务器已收到的位置继续。',
    'code-upload-unavailable': '服务器暂时无法保存文件：文件保留在本机，稍后会自动重新发送。',
    'code-upload-file-lost': '文件已不在本机：请重新选择。',
    'code-upload-storage-full': '服务器暂时没有空间保存文件：文件保留在本机，稍后会自动重新发送。',
    'code-scan-unavailable': '文件暂时无法进行病毒检查：稍后会自动重新发送。',
    'code-file-infected': '病毒扫描在此文件中发现问题，文件未保存：请选择其他文件。',
    'code-origin-not-allowed': '此网站不能向这个表单提交。',
    'code-draft-not-found': '此草稿已不存在（已过期或已删除）：请重新填写。',
    'code-draft-exists': '此提交已保存过草稿：请用恢复链接打开。',
    'code-draft-version-mismatch': '此草稿已在其他标签页或设备上修改：已载入较新的版本。',
    'code-draft-submitted': '此表单已提交：草稿不再需要。',
    'code-drafts-disabled': '此表单不保存草稿。',
    'code-entry-link-not-found': '此报名链接无效：可能输入有误或已被撤销。',
    'code-entry-version-mismatch': '您的报名已在别处（另一个标签页或设备）修改过：请重新载入后再修改。',
    'code-if-match-required': '修改未能保存：请重新载入报名后再修改。',
    'code-edit-closed': '修改已截止：没有修改任何内容。',
    'code-entry-not-live': '没有修改任何内容：此报名当前无效（已取消、未通过或尚未通过审核）。',
  },
};

/**
 * The texts for a language: Chinese for "zh" or any Chinese tag ("zh_CN"
 * from wx, "zh-Hans"), else English.
 * @param {string} [lang]
 * @returns {Record<string, string>}
 */
export function messages(lang) {
  return MESSAGES[/^zh/i.test(lang || '') ? 'zh' : 'en'];
}
