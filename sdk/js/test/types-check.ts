// Compiled by `tsc --noEmit` only: uses the public API as an application
// would, so that a change to formd.d.ts that breaks callers fails the check.
import { createClient, enhance, miniProgram, memoryStorage, type StateEvent, type State, type MiniProgramAPI } from '../formd.js';

declare const wx: MiniProgramAPI;
declare const form: HTMLFormElement;

const client = createClient({ endpoint: 'https://forms.example.org', storage: memoryStorage(), timeout: 10_000 });
const off = client.on((e: StateEvent) => {
  const s: State = e.state;
  if (s === 'invalid') for (const fe of e.errors ?? []) console.log(fe.field, fe.code);
  if (s === 'received') console.log(e.doc?.receipt);
});
off();
client.submit('spring-fair-2027', { name: 'A', tickets: 2 }).then((e) => e.state);
enhance(form, { client });
const mp = createClient({ endpoint: 'https://forms.example.org', ...miniProgram(wx) });
mp.pending().then((list) => list.map((e) => e.key));
// @ts-expect-error: a state that does not exist
const bad: State = 'done';
void bad;
// The texts, and the states and error codes they cover.
import { fieldText, language, type FieldError } from '../formd.js';
import { messages } from '../messages.js';
const t = messages(language());
const fe: FieldError = { field: 'name', code: 'too-long', message: 'must be at most 100 characters', limit: '100' };
const shown: string = fieldText(t['err-' + fe.code], fe, 'Name') + t['msg-unsaved'];
void shown;
enhance(form, { client, messages: messages('zh') });
const unsaved: State = 'unsaved';
void unsaved;
createClient({ arrivals: false, lang: 'zh_CN' }).close();
