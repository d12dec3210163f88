// Reads formd's challenges and solutions (JSON lines on stdin, from
// TestAltchaLibVerifiesFormd) and answers, one line each, whether
// altcha-lib verifies them: the other half of the compatibility check.
import { verifySolution, extractParams } from 'altcha-lib/v1';
import { createInterface } from 'node:readline';

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { hmacKey, payload } = JSON.parse(line);
  const ok = await verifySolution(payload, hmacKey, true);
  process.stdout.write(JSON.stringify({ ok, params: extractParams(payload) }) + '\n');
}
