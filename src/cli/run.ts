import { Command, CommanderError } from 'commander';
import { UsageError, ValidationError } from '../model/errors.js';
import { TopologyError } from '../mesh/topology.js';
import { goBoolFlags } from './flags.js';

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

/**
 * A subcommand whose definition is loaded only when it runs: everything after its name is handed
 * to the real command. For commands that import heavy modules (the Kubernetes client takes seconds
 * to load) so that the other commands start fast.
 */
export function lazyCommand(name: string, description: string, load: () => Promise<Command>): Command {
  return new Command(name)
    .description(description)
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .passThroughOptions()
    .argument('[args...]')
    .action(async function (this: Command, args: string[]) {
      const real = goBoolFlags(await load());
      real.name(`${this.parent?.name() ?? ''} ${name}`.trim());
      real.exitOverride();
      real.configureOutput({ writeErr: (s) => process.stderr.write(s) });
      await real.parseAsync(args, { from: 'user' });
    });
}
