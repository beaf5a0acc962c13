import { KubernetesLeases } from '../../src/backend/kubernetes/leases.js';
import { TestApiServer } from '../../packages/lab/src/apiserver.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';
import { leaseApiContract } from './leases-contract.js';

leaseApiContract('the lab API server through @kubernetes/client-node', async () => {
  const api = await TestApiServer.start();
  return {
    client: () => new KubernetesLeases({ kubeConfig: kubeConfigFor(api), namespace: 'kube-system' }),
    close: () => api.close(),
  };
});
