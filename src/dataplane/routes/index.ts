export { kiloRouteProtocol, kiloRulePriority, mainTableId } from './constants.js';
export { PartialApplyError, type ApplyFailure } from './errors.js';
export { KiloRoutingTables, type KiloRouting, type RouteMachine } from './reconciler.js';
export { IprouteMachine, linuxRoutingTables } from './linux.js';
export { FakeKernelError, FakeLinks, FakeMachine, FakeRouteMachine, fakeRoutingTables } from './fake.js';
export {
  defaultOwnership,
  describeRoute,
  describeRule,
  type KernelRoute,
  type KernelRule,
  type Ownership,
} from './state.js';
