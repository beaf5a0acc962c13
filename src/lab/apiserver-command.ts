import { Command } from 'commander';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { KubeObject } from '../model/parse.js';
import { UsageError } from '../model/errors.js';
import { parseListen } from '../agent/http.js';
import { FakeApiServer } from './apiserver.js';

/** Writes the objects as a Kubernetes List: the file doubles as a `kgctl --cluster` snapshot. */
function persist(file: string, objects: KubeObject[]): void {
  writeFileSync(`${file}.tmp`, `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 1)}\n`);
  renameSync(`${file}.tmp`, file);
}

/** `kg lab apiserver`: the lab's Kubernetes API server as a process of its own. */
export function labApiServerCommand(): Command {
  return new Command('apiserver')
    .description(
      "run the lab's Kubernetes API server (Nodes, Peers, the CRDs; what Kilo's agent, kg and kubectl use) until SIGTERM",
    )
    .option('--listen <addr>', 'address to serve the API on', '127.0.0.1:6443')
    .option('--socket <path>', 'also serve on this Unix socket')
    .option(
      '--state <file>',
      'load objects from and save them to this file (a Kubernetes List, usable as kgctl --cluster)',
    )
    .action(async (flags: { listen: string; socket?: string; state?: string }) => {
      const listen = parseListen(flags.listen);
      if (!listen) throw new UsageError(`--listen: not host:port: ${JSON.stringify(flags.listen)}`);
      const file = flags.state;
      const initial =
        file && existsSync(file)
          ? ((JSON.parse(readFileSync(file, 'utf8')) as { items?: KubeObject[] }).items ?? [])
          : [];
      let server: FakeApiServer | null = null;
      server = await FakeApiServer.start({
        port: listen.port,
        host: listen.host ?? '0.0.0.0',
        ...(flags.socket ? { socketPath: flags.socket } : {}),
        objects: initial,
        bookmarkIntervalMs: 5000,
        historyLimit: 10_000,
        onChange: () => {
          if (file && server) persist(file, server.allObjects());
        },
      });
      if (file) persist(file, server.allObjects());
      process.stdout.write(`lab API server on ${flags.listen}${flags.socket ? ` and ${flags.socket}` : ''}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await server.close();
    });
}
