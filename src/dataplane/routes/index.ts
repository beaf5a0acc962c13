export { kiloRouteProtocol, kiloRulePriority, mainTableId } from './constants.js';
export { PartialApplyError, type ApplyFailure } from './errors.js';
export { KiloRoutingTables, type KiloRouting, type RouteKernel } from './reconciler.js';
export { IprouteRoutes, linuxRoutingTables } from './linux.js';
export { FakeKernelError, FakeLinks, FakeKernel, FakeRoutes, fakeRoutingTables } from './fake.js';
export {
  defaultOwnership,
  describeRoute,
  describeRule,
  type KernelRoute,
  type KernelRule,
  type Ownership,
} from './state.js';
