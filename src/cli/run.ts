import { CommanderError, type Command } from 'commander';
import { UsageError, ValidationError } from '../model/errors.js';
import { TopologyError } from '../mesh/topology.js';

/** Errors a user can act on: one line on stderr, exit 1, no stack trace. Bugs keep theirs. */
export function isUserError(e: unknown): e is Error {
  return e instanceof UsageError || e instanceof ValidationError || e instanceof TopologyError;
}

export async function runProgram(program: Command, argv: string[]): Promise<void> {
  program.exitOverride();
  program.configureOutput({ writeErr: (s) => process.stderr.write(s) });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode;
      return;
    }
    if (isUserError(e)) {
      process.stderr.write(`${program.name()}: ${e.message}\n`);
      process.exitCode = 1;
      return;
    }
    throw e;
  }
}
