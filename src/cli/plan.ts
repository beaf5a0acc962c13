import { Command, Option } from 'commander';
import { toYaml } from './yaml-output.js';
import { planOf } from '../mesh/compute.js';
import { renderPlanText } from './plan-text.js';
import { printIndentedJson } from './json-output.js';
import { addMeshFlags, type MeshFlagValues } from './flags.js';
import { addLiveFlags, loadCluster } from './cluster.js';

export function planCommand(): Command {
  const cmd = new Command('plan')
    .description('print exactly what the agent on NODE would program')
    .argument('<node>', 'the node name')
    .option('--cluster <file>', 'cluster snapshot (Kubernetes List or multi-document YAML)')
    .addOption(
      new Option('-o, --output <format>', 'json, yaml or text').choices(['json', 'yaml', 'text']).default('json'),
    )
    .addOption(
      new Option(
        '--firewall <backend>',
        'the firewall -o text renders: iptables, nftables or auto (what the node announces, else iptables)',
      )
        .choices(['auto', 'iptables', 'nftables'])
        .default('auto'),
    );
  addLiveFlags(addMeshFlags(cmd, { allowAuto: true }));
  return cmd.action(
    async (
      node: string,
      given: MeshFlagValues & { cluster?: string; output: string; firewall: 'auto' | 'iptables' | 'nftables' },
    ) => {
      const { cluster, now, options, leaders, flags } = await loadCluster(given, node);
      const plan = planOf(cluster, node, options, now, leaders);
      if (given.output === 'yaml') process.stdout.write(await toYaml(plan));
      else if (given.output === 'text')
        process.stdout.write(
          renderPlanText(plan, { firewall: flags.firewall === 'nftables' ? 'nftables' : 'iptables' }),
        );
      else printIndentedJson(plan);
    },
  );
}
