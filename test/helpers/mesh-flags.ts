import type { MeshFlags } from '../../src/model/mesh-flags.js';
import { Cidr } from '../../src/net/cidr.js';

/** What an agent with kg's default flags announces in kilo.squat.ai/mesh-flags. */
export const defaultAnnounced: MeshFlags = {
  subnet: Cidr.parse('10.4.0.0/16'),
  port: 51820,
  encapsulate: 'always',
  local: true,
  cni: true,
  iptablesForwardRules: false,
  routeHostTraffic: false,
  serviceCidr: [],
  topologyLabel: 'topology.kubernetes.io/region',
  compatibility: '',
  leaderElection: 'annotation',
  namespace: 'kube-system',
};
