// Compiled by `tsc -p tsconfig.uni.json` only: the uni adapter against
// uni-app's official typings (@dcloudio/types), as types-wx.ts does for wx.
import { createClient, miniProgram, type MiniProgramAPI } from '../formd.js';

const all: Required<MiniProgramAPI> = uni;
void all;
const client = createClient({ endpoint: 'https://forms.example.org', ...miniProgram(uni) });
client.submit('spring-fair-2027', { name: '韩梅梅', phone: '13900139000' });

// The file system manager the uploads use (uploads.js), against the
// official typings, and miniprogram.js's miniProgram() with it.
import { miniProgram as withUploads } from '../miniprogram.js';
import type { MiniProgramFiles } from '../formd.js';
const files: MiniProgramFiles = uni;
void files;
const up = createClient({ endpoint: 'https://forms.example.org', ...withUploads(uni) });
uni.chooseImage({ count: 1, success: (r) => void up.submit('spring-fair-2027', { photo: { path: (r.tempFilePaths as string[])[0], size: (r.tempFiles as { size: number }[])[0].size } }) });
