import { KubeConfig } from '@kubernetes/client-node';

/**
 * A client configuration pointing at a lab API server (no auth). Kept apart from the server:
 * importing the Kubernetes client takes seconds (many on a loaded machine), and `kg lab apiserver`
 * never needs it — each restart of the lab's API server paid for it.
 */
export function kubeConfigFor(api: { url: string }): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser({ name: 'lab', server: api.url, skipTLSVerify: true }, { name: 'lab' });
  return kc;
}
