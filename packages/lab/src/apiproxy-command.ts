import { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { UsageError } from '../../../src/model/errors.js';
import { parseListen } from '../../../src/agent/http.js';

/**
 * `kg lab apiproxy`: the lab's API server lives in a namespace of its own, out of the host's reach;
 * this serves its Unix socket on a TCP address of the namespace the proxy runs in (the host's), so
 * kubectl and kgctl on the machine reach the lab. Bytes are copied both ways, watches included.
 */
export function labApiProxyCommand(): Command {
  return new Command('apiproxy')
    .description("serve the lab API server's Unix socket on a TCP address here, for kubectl and kgctl on the host")
    .requiredOption('--socket <path>', "the API server's Unix socket")
    .option('--listen <addr>', 'address to serve on (port 0: any free port)', '127.0.0.1:0')
    .option('--port-file <file>', 'write the port served on to this file once listening')
    .action(async (flags: { socket: string; listen: string; portFile?: string }) => {
      const listen = parseListen(flags.listen);
      if (!listen) throw new UsageError(`--listen: not host:port: ${JSON.stringify(flags.listen)}`);
      const server = createServer((client) => {
        const upstream = connect(flags.socket);
        const close = () => {
          client.destroy();
          upstream.destroy();
        };
        for (const s of [client, upstream]) s.on('error', close).on('close', close);
        client.pipe(upstream).pipe(client);
      });
      await new Promise<void>((resolve, reject) =>
        server.once('error', reject).listen(listen.port, listen.host ?? '127.0.0.1', resolve),
      );
      const { address, port } = server.address() as AddressInfo;
      if (flags.portFile) writeFileSync(flags.portFile, `${port}\n`);
      process.stdout.write(`lab API server ${flags.socket} served on ${address}:${port}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      server.close();
    });
}
