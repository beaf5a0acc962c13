import { Command } from 'commander';

/** Filled in by the graph work. */
export function graphCommand(): Command {
  return new Command('graph').description('draw the mesh (DOT or SVG)');
}
