import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

/**
 * The skip option of tests that need the machine (root, network namespaces, a system tool). Where
 * the requirement is missing they would pass by not running, so a green run could mean nothing:
 * with KILO_TS_REQUIRE_ROOT_TESTS=1 (CI sets it) the missing requirement fails the file instead, and
 * otherwise the skip is written to scripts/test.mjs's log, which prints how many files skipped.
 */
export function skipUnless(available: boolean, reason: string): string | false {
  if (available) return false;
  if (process.env.KILO_TS_REQUIRE_ROOT_TESTS === '1')
    throw new Error(`KILO_TS_REQUIRE_ROOT_TESTS=1 and this test ${reason}: it must run, not skip`);
  const log = process.env.KILO_TS_SKIP_LOG;
  if (log) appendFileSync(log, `${relative(process.cwd(), process.argv[1] ?? '?')}\t${reason}\n`);
  return reason;
}
