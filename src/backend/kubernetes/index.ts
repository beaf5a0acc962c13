export { kubeConfigFrom, type KubeConfigFlags } from './config.js';
export { KubernetesSource, type KubernetesSourceOptions, nodesPath, peersPath } from './source.js';
export { defaultReflectorTimings, type ReflectorStats, type ReflectorTimings } from './reflector.js';
export { defaultBackoff, type BackoffOptions } from './backoff.js';
export { KubernetesNodes, type KubernetesNodesOptions } from './nodes.js';
