import { Command, Option } from 'commander';
import { logLevels, type LogLevel } from '../agent/log-levels.js';
import { UsageError } from '../model/errors.js';
import type { Cidr } from '../net/cidr.js';
import { boolOption, parseCidrFlag, parseIntFlag } from './flags.js';
import { stopSignal } from './webhook.js';

interface MulticlusterFlags {
  kubeconfig?: string;
  master?: string;
  remoteKubeconfig: string;
  name: string;
  remoteName: string;
  serviceCidr?: Cidr[];
  remoteServiceCidr?: Cidr[];
  unlink: boolean;
  unlinkOnExit: boolean;
  resyncPeriod: number;
  logLevel: LogLevel;
}

const cidrList =
  (flag: string) =>
  (v: string, prev: Cidr[] = []) => [...prev, ...v.split(',').map((part) => parseCidrFlag(flag)(part.trim()))];

/**
 * `kg multicluster`: keeps two clusters linked, doing continuously what Kilo's
 * docs/multi-cluster-services.md does by hand (src/multicluster, docs/multi-cluster.md).
 */
export function multiclusterCommand(): Command {
  return new Command('multicluster')
    .description(
      "link two clusters: each one's nodes as Peers of the other, its exported Services mirrored, kept in step (docs/multi-cluster.md)",
    )
    .option('--kubeconfig <path>', 'this cluster (default: in-cluster)')
    .option('--master <url>', "this cluster's API server address (overrides the kubeconfig)")
    .requiredOption('--remote-kubeconfig <path>', 'the other cluster')
    .option('--name <name>', "this cluster's name in the link (the label on what is mirrored from it)", 'local')
    .option('--remote-name <name>', "the other cluster's name in the link", 'remote')
    .addOption(
      new Option('--service-cidr <cidr>', "this cluster's service range (repeatable, comma-separated)")
        .argParser(cidrList('service-cidr'))
        .default(undefined, 'what the agents announce (kg --service-cidr), else none'),
    )
    .addOption(
      new Option('--remote-service-cidr <cidr>', "the other cluster's service range (repeatable, comma-separated)")
        .argParser(cidrList('remote-service-cidr'))
        .default(undefined, 'what its agents announce, else none'),
    )
    .addOption(boolOption('unlink', 'remove everything the link made in both clusters, and exit', false))
    .addOption(
      boolOption('unlink-on-exit', 'on SIGTERM or SIGINT, remove everything the link made before exiting', false),
    )
    .addOption(
      new Option('--resync-period <seconds>', 'full passes (Services, repairs) this often')
        .argParser(parseIntFlag('resync-period', 1, 3600))
        .default(10),
    )
    .addOption(new Option('--log-level <level>', 'how much to log').choices(logLevels).default('info'))
    .action(async (flags: MulticlusterFlags) => {
      if (flags.name === flags.remoteName)
        throw new UsageError(
          `--name and --remote-name are both ${JSON.stringify(flags.name)}: the two clusters need names of their own`,
        );
      // Loaded when it runs: the other kg commands need neither pino nor the Kubernetes client.
      const [
        { createLogger },
        { kubeConfigFrom, KubernetesSource },
        { ClusterApi },
        { Link, unlink, defaultLinkOptions },
        { clusterView },
      ] = await Promise.all([
        import('../agent/log.js'),
        import('../backend/kubernetes/index.js'),
        import('../multicluster/api.js'),
        import('../multicluster/link.js'),
        import('./multicluster-view.js'),
      ]);
      const log = createLogger(flags.logLevel);
      const local = kubeConfigFrom({
        ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
        ...(flags.master ? { master: flags.master } : {}),
      });
      const remote = kubeConfigFrom({ kubeconfig: flags.remoteKubeconfig });
      const apis = [new ClusterApi(local, flags.name), new ClusterApi(remote, flags.remoteName)] as const;
      if (flags.unlink) {
        const n = await unlink(...apis);
        log.info({ deleted: n }, `unlinked clusters "${flags.name}" and "${flags.remoteName}"`);
        return;
      }
      // A bad or disagreeing object is said once, not at every pass.
      const said = new Set<string>();
      const warn = (line: string) => {
        if (said.has(line)) return;
        if (said.size > 1000) said.clear();
        said.add(line);
        log.warn({}, line);
      };
      const side = (api: (typeof apis)[number], serviceCidrs: Cidr[] | undefined) => ({
        api,
        source: new KubernetesSource({ kubeConfig: api.kubeConfig, logger: log }),
        view: (objects: Parameters<typeof clusterView>[1], now: number) =>
          clusterView(api.name, objects, now, serviceCidrs, warn),
      });
      const link = new Link(side(apis[0], flags.serviceCidr), side(apis[1], flags.remoteServiceCidr), {
        ...defaultLinkOptions,
        resyncMs: flags.resyncPeriod * 1000,
        logger: log,
      });
      const stopped = stopSignal();
      try {
        await link.start();
      } catch (e) {
        await link.stop();
        throw new UsageError((e as Error).message);
      }
      log.info({}, `linked clusters "${flags.name}" and "${flags.remoteName}"`);
      const signal = await stopped;
      log.info({ signal }, 'shutting down');
      await link.stop();
      if (flags.unlinkOnExit) {
        const n = await unlink(...apis);
        log.info({ deleted: n }, `unlinked clusters "${flags.name}" and "${flags.remoteName}"`);
      }
    });
}
