import { Command } from 'commander';
import { applyCommand } from './apply.js';
import { runCommand } from './kg-run.js';
import { goBoolFlags } from './flags.js';
import { withVersion } from './version.js';
import { lazyCommand, runProgram } from './run.js';
import { webhookCommand } from './webhook.js';

export function kgProgram(): Command {
  // Flags after a subcommand belong to it (as in Kilo's cobra): `kg webhook --listen` is not kg's --listen.
  return goBoolFlags(
    withVersion(new Command('kg'))
      .description('the kilo-ts agent: program this node into the WireGuard mesh')
      .enablePositionalOptions()
      .addCommand(runCommand(), { isDefault: true })
      .addCommand(applyCommand())
      .addCommand(webhookCommand())
      .addCommand(
        lazyCommand('lab', 'a mesh of network namespaces on this machine: up, status, exec, down', () =>
          import('../lab/command.js').then((m) => m.labCommand()),
        ),
      ),
  );
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgProgram(), argv);
}
