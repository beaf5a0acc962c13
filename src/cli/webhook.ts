import { Command, Option } from 'commander';
import { logLevels, type LogLevel } from '../agent/log-levels.js';
import { UsageError } from '../model/errors.js';
import { boolOption } from './flags.js';

/** Parses a Go-style listen address: `:8443` (every address), `127.0.0.1:8443`, `[::1]:8443`. */
export function parseListenAddress(flag: string, value: string): { host: string | undefined; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--${flag}: want [host]:port, got ${JSON.stringify(value)}`);
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

function formatAddress(a: { address: string; family: string; port: number }): string {
  return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

interface WebhookFlags {
  certFile: string;
  keyFile: string;
  listen: string;
  listenMetrics: string;
  logLevel: LogLevel;
  checkPodCidrs: boolean;
  kubeconfig?: string;
  master?: string;
}

/** Resolves when the process is asked to stop. */
export function stopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (s: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(s);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}

/** `kg webhook`: the HTTPS server that validates Peers for the API server, as Kilo's `kg webhook`. */
export function webhookCommand(): Command {
  return new Command('webhook')
    .description(
      'start an HTTPS server that validates creations and updates of Kilo Peers (validating admission webhook)',
    )
    .requiredOption('--cert-file <path>', 'the path to a certificate file (PEM)')
    .requiredOption('--key-file <path>', 'the path to a key file (PEM)')
    .option('--listen <address>', 'the address the webhook server listens on', ':8443')
    .option('--listen-metrics <address>', 'the address the metrics server listens on', ':1107')
    .addOption(new Option('--log-level <level>', 'how much to log').choices(logLevels).default('info'))
    .addOption(
      boolOption(
        'check-pod-cidrs',
        "kilo-ts: refuse a Peer whose allowed IPs overlap a node's pod CIDR (lists and watches Nodes)",
        true,
      ),
    )
    .option('--kubeconfig <path>', 'kubeconfig file, for --check-pod-cidrs (default: in-cluster)')
    .option('--master <url>', 'API server address, for --check-pod-cidrs (overrides the kubeconfig)')
    .action(async (flags: WebhookFlags) => {
      const webhookAt = parseListenAddress('listen', flags.listen);
      const metricsAt = parseListenAddress('listen-metrics', flags.listenMetrics);
      const kube = flags.checkPodCidrs ? await import('../backend/kubernetes/index.js') : undefined;
      let kubeConfig: ReturnType<NonNullable<typeof kube>['kubeConfigFrom']> | undefined;
      try {
        kubeConfig = kube?.kubeConfigFrom({
          ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}),
          ...(flags.master ? { master: flags.master } : {}),
        });
      } catch (e) {
        throw new UsageError(
          `--check-pod-cidrs: ${(e as Error).message}, or turn the check off with --check-pod-cidrs=false`,
        );
      }
      // Loaded when it runs: the other kg commands need neither pino nor prom-client.
      const [{ createLogger }, { startWebhook }, { serveMetrics, WebhookMetrics }, { NodePodCIDRs }] =
        await Promise.all([
          import('../agent/log.js'),
          import('../agent/webhook.js'),
          import('../agent/webhook-metrics.js'),
          import('../agent/webhook-nodes.js'),
        ]);
      const log = createLogger(flags.logLevel);
      const metrics = new WebhookMetrics();
      const stopped = stopSignal();
      // Started before the server listens, so that the first list is usually in before the first
      // review; never awaited: Peer writes must not wait on the API server (docs/kg.md#webhook).
      const reader = kube && kubeConfig ? new kube.KubernetesNodes({ kubeConfig, logger: log }) : undefined;
      reader?.start();
      reader?.waitForSync().then(
        () => log.info({ nodes: reader.objects().length }, 'listed the Nodes: checking Peers against their pod CIDRs'),
        () => undefined,
      );
      const nodes = reader ? new NodePodCIDRs(reader) : undefined;
      const webhook = await startWebhook({
        certFile: flags.certFile,
        keyFile: flags.keyFile,
        ...webhookAt,
        log,
        metrics,
        ...(nodes ? { nodes } : {}),
      }).catch(async (e: unknown) => {
        await reader?.stop();
        if (e instanceof UsageError) throw e;
        throw new UsageError(
          `--listen: cannot listen on ${flags.listen}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
        );
      });
      log.info({ address: formatAddress(webhook.address) }, 'starting webhook server');
      const metricsServer = await serveMetrics(metrics.registry, metricsAt.host, metricsAt.port).catch(
        async (e: unknown) => {
          await Promise.all([webhook.close(), reader?.stop()]);
          throw new UsageError(
            `--listen-metrics: cannot listen on ${flags.listenMetrics}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
          );
        },
      );
      log.info({ address: formatAddress(metricsServer.address) }, 'starting metrics server');
      const signal = await stopped;
      log.info({ signal }, 'shutting down');
      await Promise.all([webhook.close(), metricsServer.close(), reader?.stop()]);
    });
}
