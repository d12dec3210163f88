// @ts-check
// Where the form lives. The host must be one of the mini-program's legal
// request domains (HTTPS; 小程序管理后台 → 开发管理 → 开发设置 → 服务器域名 →
// request 合法域名), or every request fails with "url not in domain list".
export const FORMD_ENDPOINT = 'https://forms.example.org';
export const FORM_ID = 'spring-fair-2027';
// The form of the photo page (pages/photo): a text field "name" and a file
// field "photo" (see sdk/js/README.md, "Uploads").
export const PHOTO_FORM_ID = 'exam-2027';
