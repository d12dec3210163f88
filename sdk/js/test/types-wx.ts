// Compiled by `tsc -p tsconfig.wx.json` only: the wx adapter against
// WeChat's official typings (miniprogram-api-typings). The real wx must
// satisfy every member MiniProgramAPI declares, optional ones included, so
// a wrong API name, callback shape or option in formd.d.ts (and through it
// in formd.js, which is checked against formd.d.ts) fails the build.
import { createClient, miniProgram, type MiniProgramAPI } from '../formd.js';

const all: Required<MiniProgramAPI> = wx;
void all;
const client = createClient({ endpoint: 'https://forms.example.org', ...miniProgram(wx) });
client.submit('spring-fair-2027', { name: '李雷', phone: '13800138000' });
