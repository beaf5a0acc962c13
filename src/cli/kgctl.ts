import { Command } from 'commander';
import { connectCommand } from './connect-command.js';
import { goBoolFlags } from './flags.js';
import { withVersion } from './version.js';
import { graphCommand } from './graph.js';
import { planCommand } from './plan.js';
import { runProgram } from './run.js';
import { showconfCommand } from './showconf.js';

export function kgctlProgram(): Command {
  return goBoolFlags(
    withVersion(new Command('kgctl'))
      .description('inspect a Kilo mesh (plans, WireGuard configs, graphs) and connect to it as a Peer')
      .addCommand(planCommand())
      .addCommand(showconfCommand())
      .addCommand(graphCommand())
      .addCommand(connectCommand()),
  );
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgctlProgram(), argv);
}
