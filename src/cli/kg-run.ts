import { Command, Option } from 'commander';
import { defaultKeyPath } from '../wireguard/keys.js';
import { addAgentFlags, parseDuration, type AgentFlagValues } from './agent-flags.js';

/** The flags only the agent has: its key file and the key's rotation (docs/key-rotation.md). */
export interface RunFlagValues extends AgentFlagValues {
  keyFile: string;
  /** ms; 0: only on request. */
  keyRotationPeriod: number;
}

/** A duration, or 0 (off). */
function periodOrOff(name: string): (value: string) => number {
  const duration = parseDuration(name);
  return (value) => (/^0+(?:ms|s|m|h)?$/.test(value) ? 0 : duration(value));
}

/**
 * `kg` (the default command): the agent on a node of a Kubernetes cluster. Its flags are defined
 * here, its body (kg-run-agent.ts: the Kubernetes client, metrics, election) is loaded only when
 * it runs, so that kg apply, kg webhook and `kg --help` start without them.
 */
export function runCommand(): Command {
  const cmd = new Command('run').description('run the agent: join this node to the mesh and keep it there (default)');
  addAgentFlags(cmd)
    .option('--key-file <path>', 'kilo-ts: where the WireGuard private key is kept', defaultKeyPath)
    .addOption(
      new Option(
        '--key-rotation-period <duration>',
        'kilo-ts: replace the WireGuard key when it is this old (0: only on request, kilo.squat.ai/rotate-key)',
      )
        .argParser(periodOrOff('key-rotation-period'))
        .default(0, '0 (off)'),
    );
  return cmd.action(async (flags: RunFlagValues) => {
    const { runAgent } = await import('./kg-run-agent.js');
    await runAgent(flags);
  });
}
