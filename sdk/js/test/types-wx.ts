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

// The file system manager and user data path the uploads use (uploads.js),
// against the official typings, and miniprogram.js's miniProgram() with them.
import { miniProgram as withUploads } from '../miniprogram.js';
import type { MiniProgramFiles } from '../formd.js';
const files: Required<MiniProgramFiles> = wx;
void files;
const up = createClient({ endpoint: 'https://forms.example.org', ...withUploads(wx) });
wx.chooseMedia({ count: 1, mediaType: ['image'], success: (r) => void up.submit('spring-fair-2027', { photo: r.tempFiles[0] }) });
