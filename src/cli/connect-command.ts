import { readFileSync } from 'node:fs';
import { hostname as osHostname } from 'node:os';
import { Command, Option } from 'commander';
import type { LogLevel } from '../agent/log-levels.js';
import { UsageError } from '../model/errors.js';
import { Cidr } from '../net/cidr.js';
import { generatePrivateKey, isKey, publicKeyOf } from '../wireguard/keys.js';
import { parseDuration } from './agent-flags.js';
import { addLiveFlags } from './cluster.js';
import { addMeshFlags, boolOption, parseIntFlag, type MeshFlagValues } from './flags.js';
import type { ConnectOptions } from './connect.js';
import type { LiveFlags } from './live-cluster.js';

// The connection itself (./connect.js) is loaded when the command runs: it pulls in the
// Kubernetes client, which takes seconds to import, and every other kgctl command would pay for it.
function collectCidrs(name: string) {
  return (value: string, previous: Cidr[] = []): Cidr[] => {
    const out = [...previous];
    for (const part of value.split(',')) {
      const text = part.trim();
      if (text === '') continue;
      const c = Cidr.tryParse(text);
      if (!c) throw new UsageError(`--${name}: not a CIDR: ${JSON.stringify(text)}`);
      out.push(c.masked());
    }
    return out;
  };
}

type ConnectFlags = MeshFlagValues &
  LiveFlags & {
    allowedIp: string;
    allowedIps: Cidr[];
    privateKey?: string;
    cleanUp: boolean;
    mtu: number;
    resyncPeriod: number;
    interface: string;
    persistentKeepalive: number;
    logLevel: LogLevel;
    wireguard: 'auto' | 'kernel' | 'userspace';
  };

export function connectCommand(): Command {
  const cmd = new Command('connect')
    .description('join this machine to the mesh as a Peer until interrupted (needs CAP_NET_ADMIN)')
    .argument('[name]', 'the Peer name (default: this host name)')
    .addOption(
      new Option('-a, --allowed-ip <cidr>', "this Peer's address in the mesh (its allowed IP)").default(
        '10.10.10.10/32',
      ),
    )
    .addOption(
      new Option(
        '--allowed-ips <cidrs>',
        'more cluster ranges to route through the mesh, e.g. the service CIDR (comma-separated, repeatable)',
      )
        .argParser(collectCidrs('allowed-ips'))
        .default([], 'none'),
    )
    .addOption(new Option('--private-key <path>', 'WireGuard private key file (default: a new key for this run)'))
    .addOption(boolOption('clean-up', 'on exit remove the interface, its routes and a Peer this run registered', true))
    .addOption(
      new Option('--mtu <mtu>', 'MTU of the WireGuard interface')
        .argParser(parseIntFlag('mtu', 1280, 65535))
        .default(1420),
    )
    .addOption(
      new Option('--resync-period <duration>', 'reconcile at least this often')
        .argParser(parseDuration('resync-period'))
        .default(30_000, '30s'),
    )
    .addOption(new Option('-i, --interface <name>', 'the WireGuard interface (created if missing)').default('kilo0'))
    .addOption(
      new Option('--persistent-keepalive <seconds>', 'keepalive of the registered Peer; 0 = off')
        .argParser(parseIntFlag('persistent-keepalive', 0, 65535))
        .default(10),
    )
    .addOption(
      new Option('--wireguard <implementation>', 'kilo-ts: kernel, userspace (wireguard-go) or auto')
        .choices(['auto', 'kernel', 'userspace'])
        .default('auto'),
    );
  addLiveFlags(addMeshFlags(cmd, { allowAuto: true }));
  return cmd.action(async (nameArg: string | undefined, flags: ConnectFlags) => {
    const allowedIP = Cidr.tryParse(flags.allowedIp);
    if (!allowedIP) throw new UsageError(`--allowed-ip: not a CIDR: ${JSON.stringify(flags.allowedIp)}`);
    const privateKey = flags.privateKey ? readKey(flags.privateKey) : generatePrivateKey();
    // Loaded here, not at start-up: the other kgctl commands need neither a logger nor a dataplane.
    const [{ createLogger }, { linuxDataplane }, { hostExec }] = await Promise.all([
      import('../agent/log.js'),
      import('../agent/linux-dataplane.js'),
      import('../dataplane/exec.js'),
    ]);
    const log = createLogger(flags.logLevel);
    const exec = hostExec();
    const options: ConnectOptions = {
      name: nameArg ?? osHostname(),
      allowedIP,
      extraAllowedIPs: flags.allowedIps,
      persistentKeepalive: flags.persistentKeepalive,
      interfaceName: flags.interface,
      mtu: flags.mtu,
      resyncPeriodMs: flags.resyncPeriod,
      cleanUp: flags.cleanUp,
      mesh: flags,
    };
    const { device, links, routes } = linuxDataplane(exec, {
      interfaceName: flags.interface,
      createInterface: true,
      implementation: flags.wireguard,
      log: (line) => log.info({}, line),
      debug: (line) => log.debug({}, line),
    });
    const { Connection } = await import('./connect.js');
    const { liveKubeConfig } = await import('./live-cluster.js');
    const connection = new Connection({
      kubeConfig: liveKubeConfig(flags),
      dataplane: { device, links, routes },
      privateKey,
      log,
      options,
    });
    log.info({ publicKey: publicKeyOf(privateKey) }, "this machine's public key");
    const done = new Promise<void>((resolve) => {
      const stop = () => void connection.stop().finally(resolve);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    try {
      await connection.start();
    } catch (e) {
      await connection.stop().catch(() => undefined);
      throw e;
    }
    await done;
  });
}

function readKey(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (e) {
    throw new UsageError(
      `--private-key: cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  // The content is a secret: never echo it.
  if (!isKey(text)) throw new UsageError(`--private-key: ${path} does not hold a WireGuard key (base64 of 32 bytes)`);
  return text;
}
