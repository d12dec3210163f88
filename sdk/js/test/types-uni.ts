// Compiled by `tsc -p tsconfig.uni.json` only: the uni adapter against
// uni-app's official typings (@dcloudio/types), as types-wx.ts does for wx.
import { createClient, miniProgram, type MiniProgramAPI } from '../formd.js';

const all: Required<MiniProgramAPI> = uni;
void all;
const client = createClient({ endpoint: 'https://forms.example.org', ...miniProgram(uni) });
client.submit('spring-fair-2027', { name: '韩梅梅', phone: '13900139000' });
