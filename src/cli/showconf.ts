import { Command } from 'commander';

/** Filled in by the showconf work. */
export function showconfCommand(): Command {
  return new Command('showconf').description('print WireGuard configuration (wg-quick INI)');
}
