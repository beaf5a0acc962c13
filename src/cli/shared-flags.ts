import type { Command } from 'commander';

/**
 * The flags Kilo's kgctl declares on its root command (cobra persistent flags), so that they go
 * before the subcommand as well as after it: `kgctl --kubeconfig K showconf node N`. --log-level
 * is kilo-ts's (Kilo's connect has one; kilo-ts's program always had one too).
 */
export const kgctlGlobalFlags = [
  '--kubeconfig',
  '--backend',
  '--mesh-granularity',
  '--port',
  '--topology-label',
  '--log-level',
] as const;

/** Kilo's showconf declares these for node and peer alike: `kgctl showconf --as-peer node N`. */
export const showconfFlags = ['--as-peer', '--output', '--allowed-ips'] as const;

/**
 * Declares on `parent`, a command with subcommands, the options `flags` as `from` (one of its
 * subcommands) defines them: the same Option objects, so one definition, one help text. `parent`
 * then reads only the options before its subcommand (commander's positional options), and the
 * subcommand those after it; `inheritSharedFlags` hands the first to the subcommand that runs.
 * Any other option before the subcommand stays an error naming it, as in Kilo.
 * @throws Error when `from` has no such flag (a programming error).
 */
export function shareFlags(parent: Command, from: Command, flags: readonly string[]): Command {
  parent.enablePositionalOptions();
  for (const flag of flags) {
    const option = from.options.find((o) => o.long === flag);
    if (!option) throw new Error(`${from.name()} has no ${flag} to share with ${parent.name()}`);
    parent.addOption(option);
  }
  return parent;
}

/**
 * A preAction hook: every flag given before the subcommand (on an ancestor of `action`) as if given
 * after it. Later wins as in cobra (`--port 1 plan N --port 2` is 2); a repeatable flag (an array,
 * such as --allowed-ips) collects its values in command-line order.
 */
export function inheritSharedFlags(action: Command): void {
  // Nearest ancestor first: its flags came later on the command line than its parent's.
  for (let parent = action.parent; parent; parent = parent.parent) {
    for (const option of parent.options) {
      const key = option.attributeName();
      if (parent.getOptionValueSource(key) !== 'cli' || !action.options.some((o) => o.attributeName() === key))
        continue;
      const theirs: unknown = parent.getOptionValue(key);
      const mine: unknown = action.getOptionValue(key);
      if (action.getOptionValueSource(key) !== 'cli') action.setOptionValueWithSource(key, theirs, 'cli');
      else if (Array.isArray(theirs) && Array.isArray(mine))
        action.setOptionValueWithSource(key, [...(theirs as unknown[]), ...(mine as unknown[])], 'cli');
    }
  }
}
