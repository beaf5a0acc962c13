import { Command } from 'commander';
import { UsageError } from '../model/errors.js';
import { applyCommand, type ApplyHost } from './apply.js';
import { runCommand } from './kg-run.js';
import { goBoolFlags } from './flags.js';
import { withVersion } from './version.js';
import { lazyCommand, runProgram } from './run.js';
import { webhookCommand } from './webhook.js';
import { multiclusterCommand } from './multicluster.js';

export function kgProgram(applyHost?: () => ApplyHost): Command {
  const run = runCommand();
  // Flags after a subcommand belong to it (as in Kilo's cobra): `kg webhook --listen` is not kg's --listen.
  const program = goBoolFlags(
    withVersion(new Command('kg'))
      .description('the kilo-ts agent: program this node into the WireGuard mesh')
      .usage('[agent flags] | kg <command> [flags]')
      .enablePositionalOptions()
      .addCommand(run, { isDefault: true })
      .addCommand(applyCommand(applyHost))
      .addCommand(webhookCommand())
      .addCommand(multiclusterCommand())
      .addCommand(lazyCommand('lab', 'a mesh of network namespaces on this machine: up, status, exec, down', loadLab)),
  );
  // Kilo's `kg` is the agent: a Kilo user looks for the agent's flags in `kg --help`.
  program.addHelpText(
    'after',
    () => `\nAgent flags (kg run, the default command: \`kg FLAGS\` is \`kg run FLAGS\`):\n${optionsOf(run)}`,
  );
  // A word that is no command reaches the default command as an argument: say what it is not.
  run.allowExcessArguments().hook('preAction', (self) => {
    const word = self.args[0];
    if (word !== undefined && program.commands.some((c) => c.name() === word))
      throw new UsageError(
        `${JSON.stringify(word)} after agent flags: flags before a command are the agent's (kg run); put them after it: kg ${word} [flags]`,
      );
    if (word !== undefined)
      throw new UsageError(
        `unknown command ${JSON.stringify(word)}: kg's commands are ${program.commands.map((c) => c.name()).join(', ')}; the agent (run) is the default (kg --help)`,
      );
  });
  return program;
}

/**
 * The lab (a test API server and agents in network namespaces) is the repository's demo, not part
 * of the agent: the image leaves packages/lab out, so there `kg lab` says where to find it.
 */
async function loadLab(): Promise<Command> {
  try {
    const { labCommand } = await import('../../packages/lab/src/command.js');
    return labCommand();
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    // An ES module's import, or (the built script, scripts/build.mjs) a require.
    if (
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      e instanceof Error &&
      e.message.includes('/lab/src/command.js')
    )
      throw new UsageError(
        'the lab is not part of this installation (the image leaves it out): run `kg lab` from a checkout of kilo-ts (npm ci && npm run build && bin/kg lab up; README.md)',
      );
    throw e;
  }
}

/** The "Options:" block of a command's help. */
function optionsOf(cmd: Command): string {
  const help = cmd.helpInformation();
  return help.slice(help.indexOf('Options:\n') + 'Options:\n'.length);
}

export async function main(argv: string[]): Promise<void> {
  const program = kgProgram();
  await runProgram(
    program,
    hoistLogLevel(
      argv,
      program.commands.map((c) => c.name()),
    ),
  );
}

/**
 * `kg --log-level debug lab show`: kg's own flags are the agent's (kg run is the default command),
 * so a leading --log-level would make `lab` an excess word of kg run. Every command takes
 * --log-level (kg lab before its subcommand), so a --log-level before a command's name moves to
 * just after it: `kg lab --log-level debug show`. Anything else is left as it is.
 */
export function hoistLogLevel(argv: readonly string[], commands: readonly string[]): string[] {
  const lead: string[] = [];
  let i = 0;
  for (;;) {
    const a = argv[i];
    if (a === '--log-level' && i + 1 < argv.length) lead.push(a, argv[i + 1]!);
    else if (a?.startsWith('--log-level=')) lead.push(a);
    else break;
    i += a === '--log-level' ? 2 : 1;
  }
  const word = argv[i];
  if (lead.length === 0 || word === undefined || !commands.includes(word)) return [...argv];
  return [word, ...lead, ...argv.slice(i + 1)];
}

/** The build's training of kg's code cache (scripts/build.mjs): see kg-training.ts. */
export async function train(dir: string): Promise<void> {
  const { trainApply } = await import('./kg-training.js');
  await trainApply(dir, (host, argv) => runProgram(kgProgram(host), argv));
}
