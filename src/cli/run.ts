import { Command, CommanderError } from 'commander';
import { oneLine, UsageError, ValidationError } from '../model/errors.js';
import { TopologyError } from '../mesh/topology.js';
import { goBoolFlags } from './flags.js';

/** Errors a user can act on: one line on stderr, exit 1, no stack trace. Bugs keep theirs. */
export function isUserError(e: unknown): e is Error {
  return e instanceof UsageError || e instanceof ValidationError || e instanceof TopologyError;
}

/** --log-level debug or all anywhere on the command line: a bug then prints its stack trace. */
function wantsTrace(argv: readonly string[]): boolean {
  return argv.some(
    (a, i) => /^--log-level=(debug|all)$/.test(a) || (a === '--log-level' && /^(debug|all)$/.test(argv[i + 1] ?? '')),
  );
}

/**
 * Runs a command and catches everything at the top: the process never dies of its input with a
 * stack trace. A user error is one line; anything else is a bug, one line too, with a pointer to
 * --log-level debug, which prints the trace. Either way exit status 1.
 */
export async function runProgram(program: Command, argv: string[]): Promise<void> {
  endOnClosedPipe();
  program.exitOverride();
  ownErrors(program, program.name());
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode;
      return;
    }
    process.exitCode = 1;
    if (isUserError(e)) {
      process.stderr.write(`${program.name()}: ${oneLine(e, 2000)}\n`);
      return;
    }
    if (wantsTrace(argv)) {
      process.stderr.write(
        `${program.name()}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      return;
    }
    process.stderr.write(
      `${program.name()}: internal error (a bug, please report it): ${oneLine(e)}; run with --log-level debug for the trace\n`,
    );
  }
}

/**
 * Every error the user sees starts with the program's name (`kg:`, `kgctl:`), as those runProgram
 * catches do: commander's own (unknown option, invalid choice, missing argument) start with
 * `error:`, and are rewritten, in the command and every subcommand (which do not inherit it).
 */
export function ownErrors(cmd: Command, name: string): void {
  cmd.configureOutput({
    writeErr: (s) => process.stderr.write(s),
    outputError: (s, write) => write(s.replace(/^error: /, `${name}: `)),
  });
  for (const sub of cmd.commands) ownErrors(sub, name);
}

let pipeWatched = false;

/**
 * `kgctl plan ... | head`: the reader has gone. A Unix filter (Kilo's Go kgctl among them) is
 * ended by SIGPIPE there, silently, status 128+13; Node ignores SIGPIPE and would instead die of
 * the stream's unhandled 'error' with a stack trace. Any other write error stays a crash.
 */
function endOnClosedPipe(): void {
  if (pipeWatched) return;
  pipeWatched = true;
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(141);
      throw e;
    });
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
      ownErrors(real, this.parent?.name() ?? name);
      await real.parseAsync(args, { from: 'user' });
    });
}
