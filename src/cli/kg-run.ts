import { Command } from 'commander';
import { defaultKeyPath } from '../wireguard/keys.js';
import { addAgentFlags, type AgentFlagValues } from './agent-flags.js';

/**
 * `kg` (the default command): the agent on a node of a Kubernetes cluster. Its flags are defined
 * here, its body (kg-run-agent.ts: the Kubernetes client, metrics, election) is loaded only when
 * it runs, so that kg apply, kg webhook and `kg --help` start without them.
 */
export function runCommand(): Command {
  const cmd = new Command('run').description('run the agent: join this node to the mesh and keep it there (default)');
  addAgentFlags(cmd).option('--key-file <path>', 'kilo-ts: where the WireGuard private key is kept', defaultKeyPath);
  return cmd.action(async (flags: AgentFlagValues & { keyFile: string }) => {
    const { runAgent } = await import('./kg-run-agent.js');
    await runAgent(flags);
  });
}
