import { Command } from 'commander';
import { connectCommand } from './connect-command.js';
import { goBoolFlags } from './flags.js';
import { withVersion } from './version.js';
import { graphCommand } from './graph.js';
import { planCommand } from './plan.js';
import { runProgram } from './run.js';
import { inheritSharedFlags, kgctlGlobalFlags, shareFlags } from './shared-flags.js';
import { showconfCommand } from './showconf.js';
import { statusCommand } from './status.js';

export function kgctlProgram(): Command {
  const plan = planCommand();
  const program = withVersion(new Command('kgctl'))
    .description('inspect a Kilo mesh (plans, WireGuard configs, graphs, status) and connect to it as a Peer')
    .usage('[global flags] <command> [flags]');
  // Kilo's root flags go before the subcommand too: `kgctl --kubeconfig K showconf node N`.
  shareFlags(program, plan, kgctlGlobalFlags)
    .hook('preAction', (_self, action) => inheritSharedFlags(action))
    .addHelpText('after', "\nThe options above go before or after the command (as Kilo's); a command's own follow it.");
  return goBoolFlags(
    program
      .addCommand(plan)
      .addCommand(showconfCommand())
      .addCommand(graphCommand())
      .addCommand(statusCommand())
      .addCommand(connectCommand()),
  );
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgctlProgram(), argv);
}
