import { KubernetesLeases } from '../../src/election/kubernetes-leases.js';
import { FakeApiServer } from '../../packages/lab/src/apiserver.js';
import { kubeConfigFor } from '../../packages/lab/src/apiserver-kubeconfig.js';
import { leaseApiContract } from './lease-api-contract.js';

leaseApiContract('the lab API server through @kubernetes/client-node', async () => {
  const api = await FakeApiServer.start();
  return {
    client: () => new KubernetesLeases({ kubeConfig: kubeConfigFor(api), namespace: 'kube-system' }),
    close: () => api.close(),
  };
});
