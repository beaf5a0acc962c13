/**
 * Kilo's own agent for the mixed-cluster lab tests (lab-kilo-mixed, lab-key-rotation-kilo): where it
 * lies, whether the tests can run, and unpacking it.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { skipUnless } from '../helpers/requirements.js';

const kiloGz = process.env['KILO_TS_KILO_AGENT_GZ'] ?? join(import.meta.dirname, '../../../shared/kilo/kg-9bba9d4.gz');
const kiloSha256 = '5275026c4684d54cd687e498080614b59f5b3de0a510bf7dea7dde64aaf61f4e';

/**
 * Kilo's agent is not the project's: it lies beside the repository (../shared/kilo). Where it is
 * absent the file skips loudly (in the skip banner too); with KILO_TS_REQUIRE_ROOT_TESTS=1 (CI, whose
 * copy of shared/ has it) its absence fails the file like any other missing requirement.
 */
export function skipNoKilo(): string | false {
  const present = existsSync(kiloGz);
  const reason = `needs Kilo's agent at ${kiloGz}, which is absent (set KILO_TS_KILO_AGENT_GZ): the mixed Kilo/kilo-ts cluster was NOT tested`;
  if (!present) console.error(`\n${'!'.repeat(100)}\n${reason}\n${'!'.repeat(100)}\n`);
  return skipUnless(present, reason);
}

/** Kilo's `kg`, unpacked into a directory of this test's (removed after it). */
export function unpackKilo(dir: string): string {
  const bin = join(dir, 'kg');
  const data = gunzipSync(readFileSync(kiloGz));
  const sum = createHash('sha256').update(data).digest('hex');
  assert.equal(sum, kiloSha256, `${kiloGz} is not the Kilo build ../shared/kilo/README.md describes`);
  writeFileSync(bin, data);
  chmodSync(bin, 0o755);
  return bin;
}
