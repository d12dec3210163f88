// The names a person is told to import: every `import { … } from '…'` in
// the SDK's READMEs (English and Chinese), with './formd.js' and the like
// read as the package's subpaths, and every export of the package's main
// entry (formd.js and messages.js), so nothing the package offers is
// missing from '@formd/sdk'.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const sdk = join(dirname(fileURLToPath(import.meta.url)), '..');

/** @returns {Map<string, Set<string>>} names by module specifier */
export function documented() {
  /** @type {Map<string, Set<string>>} */
  const by = new Map();
  const add = (spec, names) => {
    if (!by.has(spec)) by.set(spec, new Set());
    for (const n of names) by.get(spec).add(n);
  };
  for (const readme of ['README.md', 'README.zh.md']) {
    const text = readFileSync(join(sdk, readme), 'utf8');
    for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)) {
      let spec = m[2];
      if (spec.startsWith('./')) spec = '@formd/sdk/' + spec.slice(2);
      if (!spec.startsWith('@formd/sdk')) continue;
      add(spec, m[1].split(',').map((s) => s.trim()).filter(Boolean));
    }
  }
  for (const file of ['formd.js', 'messages.js']) {
    const text = readFileSync(join(sdk, file), 'utf8');
    add('@formd/sdk', [...text.matchAll(/^export (?:async )?(?:function|const|let|class) (\w+)/gm)].map((m) => m[1]));
  }
  return by;
}

/** An ES module that imports every documented name by name and hands them to the test on globalThis.formdCheck. */
export function entrySource() {
  const lines = [];
  const all = [];
  let i = 0;
  for (const [spec, names] of documented()) {
    const local = [...names].map((n) => [n, `${n}_${i}`]);
    lines.push(`import { ${local.map(([n, l]) => `${n} as ${l}`).join(', ')} } from '${spec}';`);
    for (const [n, l] of local) all.push(`${JSON.stringify(spec + ' ' + n)}: ${l}`);
    i++;
  }
  lines.push(`globalThis.formdCheck = { ${all.join(', ')} };`);
  return lines.join('\n') + '\n';
}

/** The same imports for the type checker. */
export function typesSource() {
  const lines = [];
  let i = 0;
  for (const [spec, names] of documented()) {
    lines.push(`import { ${[...names].map((n) => `${n} as ${n}_${i}`).join(', ')} } from '${spec}';`);
    lines.push(`export const used_${i} = [${[...names].map((n) => `${n}_${i}`).join(', ')}];`);
    i++;
  }
  lines.push(`import type { Client, StateEvent, FieldError } from '@formd/sdk';`);
  lines.push(`export type Used = [Client, StateEvent, FieldError];`);
  return lines.join('\n') + '\n';
}
