import { Command } from 'commander';
import { runProgram } from './run.js';

export function kgProgram(): Command {
  return new Command('kg').description('the kilo-ts agent: program this node into the WireGuard mesh');
}

export async function main(argv: string[]): Promise<void> {
  await runProgram(kgProgram(), argv);
}
