import { Command, Option } from 'commander';
import { logLevels, type LogLevel } from '../agent/log-levels.js';
import { UsageError } from '../model/errors.js';

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
    .action(async (flags: WebhookFlags) => {
      const webhookAt = parseListenAddress('listen', flags.listen);
      const metricsAt = parseListenAddress('listen-metrics', flags.listenMetrics);
      // Loaded when it runs: the other kg commands need neither pino nor prom-client.
      const [{ createLogger }, { startWebhook }, { serveMetrics, WebhookMetrics }] = await Promise.all([
        import('../agent/log.js'),
        import('../agent/webhook.js'),
        import('../agent/webhook-metrics.js'),
      ]);
      const log = createLogger(flags.logLevel);
      const metrics = new WebhookMetrics();
      const stopped = stopSignal();
      const webhook = await startWebhook({
        certFile: flags.certFile,
        keyFile: flags.keyFile,
        ...webhookAt,
        log,
        metrics,
      }).catch((e: unknown) => {
        if (e instanceof UsageError) throw e;
        throw new UsageError(
          `--listen: cannot listen on ${flags.listen}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
        );
      });
      log.info({ address: formatAddress(webhook.address) }, 'starting webhook server');
      const metricsServer = await serveMetrics(metrics.registry, metricsAt.host, metricsAt.port).catch(
        async (e: unknown) => {
          await webhook.close();
          throw new UsageError(
            `--listen-metrics: cannot listen on ${flags.listenMetrics}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
          );
        },
      );
      log.info({ address: formatAddress(metricsServer.address) }, 'starting metrics server');
      const signal = await stopped;
      log.info({ signal }, 'shutting down');
      await Promise.all([webhook.close(), metricsServer.close()]);
    });
}
