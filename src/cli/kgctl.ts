import { Command } from 'commander';
import { planCommand } from './plan.js';
import { runProgram } from './run.js';

export function kgctlProgram(): Command {
  return new Command('kgctl')
    .description('inspect a Kilo mesh: plans, WireGuard configs and graphs')
    .addCommand(planCommand());
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgctlProgram(), argv);
}
