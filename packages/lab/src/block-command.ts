import { Command, Option } from 'commander';
import { UsageError } from '../../../src/model/errors.js';
import { setLocationsBlocked } from './block.js';
import { Lab } from './lab.js';

/**
 * `kg lab block A B` and `kg lab unblock A B`: UDP between the public subnets of locations A and B
 * dropped on the internet router, or let through again (block.ts): a firewall between two sites,
 * which relays work around (docs/relays.md).
 */
export function blockCommand(blocked: boolean): Command {
  return new Command(blocked ? 'block' : 'unblock')
    .description(
      blocked
        ? "drop UDP between two locations' uplinks (their WireGuard cannot reach each other directly)"
        : 'let UDP between two locations through again',
    )
    .argument('<a>', 'a location number (1-based)')
    .argument('<b>', 'another location number')
    .addOption(new Option('--state-dir <dir>', 'the lab to act on').default('/tmp/kilo-lab'))
    .action((a: string, b: string, f: { stateDir: string }) => {
      const lab = Lab.openCluster(f.stateDir, 1);
      const n = lab.options.locations;
      const location = (v: string) => {
        const x = Number(v);
        if (!/^\d+$/.test(v) || x < 1 || x > n)
          throw new UsageError(
            `kg lab ${blocked ? 'block' : 'unblock'}: want a location from 1 to ${n}, got ${JSON.stringify(v)}`,
          );
        return x;
      };
      const [x, y] = [location(a), location(b)];
      if (x === y)
        throw new UsageError(`kg lab ${blocked ? 'block' : 'unblock'}: two different locations, got ${x} twice`);
      setLocationsBlocked(lab.options, x, y, blocked);
      process.stdout.write(`UDP between location ${x} and location ${y} ${blocked ? 'dropped' : 'let through'}\n`);
    });
}
