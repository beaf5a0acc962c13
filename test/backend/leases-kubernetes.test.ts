import { KubernetesLeases } from '../../src/backend/kubernetes/leases.js';
import { FakeApiServer } from '../../src/lab/apiserver.js';
import { kubeConfigFor } from '../../src/lab/apiserver-kubeconfig.js';
import { leaseApiContract } from './leases-contract.js';

leaseApiContract('the lab API server through @kubernetes/client-node', async () => {
  const api = await FakeApiServer.start();
  return {
    client: () => new KubernetesLeases({ kubeConfig: kubeConfigFor(api), namespace: 'kube-system' }),
    close: () => api.close(),
  };
});
