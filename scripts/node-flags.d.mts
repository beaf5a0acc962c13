export interface NodeLaunch {
  /** The program the line runs (env). */
  envPath: string;
  /** The environment env sets before node: NAME → VALUE. */
  env: Record<string, string>;
  /** node's flags. */
  flags: string[];
}
export function nodeLaunch(launcher: string): NodeLaunch;
export function nodeFlags(launcher: string): string[];
/** [program, ...its arguments] */
export function nodeCommand(launcher: string, rest?: readonly string[]): [string, ...string[]];
