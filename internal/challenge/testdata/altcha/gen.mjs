// Makes vectors.json: ALTCHA v1 challenges and their solutions, made and
// checked by altcha-lib (the protocol's reference), that formd's Go
// verifier must agree with. Run `npm ci && npm run gen` here; the output
// is committed, so `go test` needs no Node.
import { createChallenge, solveChallenge, verifySolution } from 'altcha-lib/v1';

const hmacKey = 'formd-test-vectors-key';
const expires = new Date('2030-01-02T03:04:05Z');
const vectors = [];

// Fixed salts and numbers: the exact challenge and signature altcha-lib
// computes for each.
for (const [salt, number, maxnumber] of [
  ['0a1b2c3d4e5f', 0, 1000],
  ['0a1b2c3d4e5f', 1234, 50000],
  ['deadbeefcafe?expires=1893553445&form=spring-fair&', 49999, 50000],
  ['s?form=spring-fair&expires=1893553445&', 777, 100000],
]) {
  const c = await createChallenge({ hmacKey, salt, number, maxnumber });
  vectors.push({ name: `fixed salt ${salt} number ${number}`, hmacKey, salt: c.salt, number, maxnumber, challenge: c.challenge, signature: c.signature });
}

// Random challenges bound to a form and an expiry, as formd issues them,
// solved by altcha-lib's solver and encoded as the widget sends them.
for (let i = 0; i < 4; i++) {
  const c = await createChallenge({ hmacKey, maxnumber: 20000, expires, params: { form: 'spring-fair' } });
  const s = await solveChallenge(c.challenge, c.salt, c.algorithm, c.maxnumber).promise;
  const payload = btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: s.number, salt: c.salt, signature: c.signature, took: 0 }));
  if (!(await verifySolution(payload, hmacKey, false))) throw new Error('altcha-lib refused its own solution');
  vectors.push({ name: `solved ${i}`, hmacKey, salt: c.salt, number: s.number, maxnumber: c.maxnumber, challenge: c.challenge, signature: c.signature, payload, form: 'spring-fair', expires: Math.floor(expires.getTime() / 1000) });
}

process.stdout.write(JSON.stringify({ generator: 'altcha-lib 2.8.0 (altcha-lib/v1)', vectors }, null, 1) + '\n');
