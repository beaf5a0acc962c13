import { Command, Option } from 'commander';
import { logLevels } from '../agent/log-levels.js';
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
      // Read by runProgram: at debug, an internal error prints its stack trace.
      .addOption(new Option('--log-level <level>', 'how much to log').choices(logLevels).default('info'))
      .addCommand(planCommand())
      .addCommand(showconfCommand())
      .addCommand(graphCommand())
      .addCommand(connectCommand()),
  );
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgctlProgram(), argv);
}
