import { KubeConfig, type Cluster } from '@kubernetes/client-node';
import { UsageError } from '../../model/errors.js';

export interface KubeConfigFlags {
  /** Path of a kubeconfig file (--kubeconfig). */
  kubeconfig?: string;
  /** API server URL (--master); overrides the kubeconfig's server when both are given. */
  master?: string;
}

/**
 * The client configuration as Kilo builds it from its flags: a kubeconfig file, a master URL, or
 * both (the URL wins); neither means in-cluster (service account token and CA).
 * @throws UsageError when the kubeconfig cannot be read or there is no cluster to talk to.
 */
export function kubeConfigFrom(flags: KubeConfigFlags): KubeConfig {
  const kc = new KubeConfig();
  if (flags.kubeconfig) {
    try {
      kc.loadFromFile(flags.kubeconfig);
    } catch (e) {
      throw new UsageError(`cannot load kubeconfig ${flags.kubeconfig}: ${(e as Error).message.split('\n')[0]}`);
    }
    if (!kc.getCurrentCluster()) throw new UsageError(`kubeconfig ${flags.kubeconfig} has no current cluster`);
  } else if (flags.master) {
    kc.loadFromClusterAndUser({ name: 'master', server: flags.master, skipTLSVerify: false }, { name: 'user' });
  } else {
    if (!process.env['KUBERNETES_SERVICE_HOST'] || !process.env['KUBERNETES_SERVICE_PORT']) {
      throw new UsageError(
        'not running inside a cluster (KUBERNETES_SERVICE_HOST is unset): give --kubeconfig or --master',
      );
    }
    kc.loadFromCluster();
  }
  const current = kc.getCurrentCluster()!;
  let server = current.server;
  if (flags.master) {
    try {
      new URL(flags.master);
    } catch {
      throw new UsageError(`--master ${JSON.stringify(flags.master)} is not a URL (e.g. https://10.0.0.1:6443)`);
    }
    server = flags.master;
  }
  // The client refuses plain-HTTP servers unless TLS verification is "skipped"; over http there
  // is nothing to verify, so say so rather than fail.
  const patched: Cluster = { ...current, server, skipTLSVerify: current.skipTLSVerify || server.startsWith('http:') };
  kc.loadFromOptions({
    clusters: kc.clusters.map((c) => (c.name === current.name ? patched : c)),
    contexts: kc.contexts,
    users: kc.users,
    currentContext: kc.currentContext,
  });
  return kc;
}
