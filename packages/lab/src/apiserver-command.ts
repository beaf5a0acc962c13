import { Command } from 'commander';
import { UsageError } from '../../../src/model/errors.js';
import { parseListen } from '../../../src/agent/http.js';
import { TestApiServer } from './apiserver.js';
import { loadState, saveState } from './apiserver-state.js';
import { defaultServiceCidr } from './apiserver-services.js';

/** `kg lab apiserver`: the lab's Kubernetes API server as a process of its own. */
export function labApiServerCommand(): Command {
  return new Command('apiserver')
    .description(
      "run the lab's Kubernetes API server (Nodes, Peers, Services, the CRDs; what Kilo's agent, kg and kubectl use) until SIGTERM",
    )
    .option('--listen <addr>', 'address to serve the API on', '127.0.0.1:6443')
    .option('--socket <path>', 'also serve on this Unix socket')
    .option(
      '--state <file>',
      'load objects from and save them to this file (a Kubernetes List, usable as kgctl --cluster)',
    )
    .option(
      '--service-cluster-ip-range <cidr>',
      "the range Services' clusterIPs come from, as kube-apiserver's flag",
      defaultServiceCidr,
    )
    .action(async (flags: { listen: string; socket?: string; state?: string; serviceClusterIpRange: string }) => {
      const listen = parseListen(flags.listen);
      if (!listen) throw new UsageError(`--listen: not host:port: ${JSON.stringify(flags.listen)}`);
      const file = flags.state;
      // Restarted on the same file, it goes on as a real API server does after a restart.
      const saved = file ? loadState(file) : null;
      let server: TestApiServer | null = null;
      server = await TestApiServer.start({
        port: listen.port,
        host: listen.host ?? '0.0.0.0',
        ...(flags.socket ? { socketPath: flags.socket } : {}),
        ...(saved ? { objects: saved.objects, revision: saved.revision } : {}),
        serviceCidr: flags.serviceClusterIpRange,
        bookmarkIntervalMs: 5000,
        historyLimit: 10_000,
        onChange: () => {
          if (file && server) saveState(file, server);
        },
      });
      if (file) saveState(file, server);
      process.stdout.write(`lab API server on ${flags.listen}${flags.socket ? ` and ${flags.socket}` : ''}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await server.close();
    });
}
