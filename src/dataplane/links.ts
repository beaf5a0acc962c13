import { Cidr, IP } from '../net/cidr.js';
import { ExecError, type Exec } from './exec.js';
import { runBatch, type BatchFailure } from './routes/batch.js';
import { PartialApplyError, type ApplyFailure } from './routes/errors.js';
import { isDeviceName } from './routes/state.js';
import type { DiffAgainst, Links, Ops } from './types.js';

/** An interface as Links sees it. */
export interface LinkState {
  up: boolean;
  mtu: number;
  /** Addresses with their prefix ("10.4.0.1/16"), except kernel-made IPv6 link-local ones. */
  addresses: string[];
}

export interface DesiredLink {
  address: string | null;
  /** Dual-stack: every address, `address` (IPv4's) first; absent = `address` alone. */
  addresses?: readonly string[];
  up: boolean;
  mtu: number | null;
}

export type LinkOp =
  { kind: 'address'; action: 'add' | 'del'; address: string } | { kind: 'mtu'; mtu: number } | { kind: 'up' | 'down' };

/** "10.4.0.1/16" in canonical text (host bits kept: it is an interface address). */
export function canonicalAddress(text: string): string {
  const c = Cidr.tryParse(text);
  if (!c)
    throw new TypeError(`interface address ${JSON.stringify(text)} is not an address with a prefix (e.g. 10.4.0.1/16)`);
  return c.toString();
}

/**
 * The changes from `current` to `desired`. Down goes first and up last so that the interface
 * never carries traffic with the old address or MTU; an MTU of null leaves it as it is.
 */
export function diffLink(current: LinkState, desired: DesiredLink): LinkOp[] {
  const ops: LinkOp[] = [];
  const want = desiredAddresses(desired).map(canonicalAddress);
  if (!desired.up && current.up) ops.push({ kind: 'down' });
  if (desired.mtu !== null && desired.mtu !== current.mtu) ops.push({ kind: 'mtu', mtu: desired.mtu });
  for (const a of current.addresses) if (!want.includes(a)) ops.push({ kind: 'address', action: 'del', address: a });
  for (const a of want) if (!current.addresses.includes(a)) ops.push({ kind: 'address', action: 'add', address: a });
  if (desired.up && !current.up) ops.push({ kind: 'up' });
  return ops;
}

/** The interface's addresses: one per family of the mesh. */
export function desiredAddresses(desired: DesiredLink): readonly string[] {
  return desired.addresses ?? (desired.address === null ? [] : [desired.address]);
}

/**
 * Whether taking `current` to `desired` may remove routes: an address taken away or the link brought
 * down drops routes through it, and so does an MTU IPv6 cannot run at (below 1280 the kernel drops
 * the link's IPv6 routes). An address added, the link brought up, another MTU remove none.
 */
export function linkRemovesRoutes(current: LinkState, desired: DesiredLink): boolean {
  const keeps = (op: LinkOp) =>
    (op.kind === 'address' && op.action === 'add') || op.kind === 'up' || (op.kind === 'mtu' && op.mtu >= 1280);
  return !diffLink(current, desired).every(keeps);
}

/** Rejects what would make a malformed `ip` line, naming the field and value. */
export function checkDesired(device: string, state: DesiredLink): void {
  if (!isDeviceName(device)) throw new TypeError(`interface name ${JSON.stringify(device)} is not valid`);
  if (state.mtu !== null && !(Number.isInteger(state.mtu) && state.mtu >= 68 && state.mtu <= 65535)) {
    throw new TypeError(`interface ${device}: MTU ${state.mtu} is not an integer from 68 to 65535`);
  }
  for (const a of desiredAddresses(state)) canonicalAddress(a);
}

export function describeLinkOp(device: string, op: LinkOp): string {
  switch (op.kind) {
    case 'address':
      return `address ${op.action} ${op.address} dev ${device}`;
    case 'mtu':
      return `link set dev ${device} mtu ${op.mtu}`;
    default:
      return `link set dev ${device} ${op.kind}`;
  }
}

interface IpAddrJson {
  ifname: string;
  flags?: string[];
  mtu?: number;
  addr_info?: { family: string; local?: string; prefixlen?: number; scope?: string }[];
}

function linkStateOf(entry: IpAddrJson): LinkState {
  const addresses: string[] = [];
  for (const a of entry.addr_info ?? []) {
    if (a.local === undefined || a.prefixlen === undefined) continue;
    // The kernel makes and owns IPv6 link-local addresses; removing one only makes it come back.
    if (a.family === 'inet6' && a.scope === 'link') continue;
    const ip = IP.tryParse(a.local);
    if (ip) addresses.push(`${ip.text}/${a.prefixlen}`);
  }
  return { up: entry.flags?.includes('UP') ?? false, mtu: entry.mtu ?? 0, addresses };
}

async function addrShow(exec: Exec, device: string): Promise<IpAddrJson[]> {
  const { stdout } = await exec.run(['ip', '-j', 'addr', 'show', 'dev', device]);
  return JSON.parse(stdout || '[]') as IpAddrJson[];
}

/** Links through iproute2: one `ip -j addr show dev X` to read, one `ip -batch` to write. */
export class LinuxLinks implements Links {
  constructor(private readonly exec: Exec) {}

  async read(device: string): Promise<LinkState> {
    const entries = await addrShow(this.exec, device).catch((e: unknown) => {
      if (e instanceof ExecError && /does not exist/.test(e.stderr)) return [];
      throw new Error(`interface ${device}: cannot read it: ${e instanceof Error ? e.message : String(e)}`);
    });
    const entry = entries[0];
    if (!entry) throw new Error(`interface ${device} does not exist`);
    return linkStateOf(entry);
  }

  /** `current`: the interface read earlier (read-ahead.ts), diffed against instead of a read. */
  async reconcile(device: string, state: DesiredLink, options: DiffAgainst<LinkState> = {}): Promise<Ops> {
    checkDesired(device, state);
    const ops = diffLink(options.current ?? (await this.read(device)), state);
    const lines = ops.map((op) => describeLinkOp(device, op));
    const result = await runBatch(this.exec, lines);
    return opsOrThrow(lines, result.failures);
  }
}

/** Ops for the lines that took effect; throws PartialApplyError naming the ones that did not. */
export function opsOrThrow(lines: readonly string[], failed: readonly BatchFailure[]): Ops {
  const byIndex = new Map(failed.map((f) => [f.index, f.message]));
  const failures: ApplyFailure[] = [];
  const ops: Ops = { writes: 0, details: [] };
  lines.forEach((line, i) => {
    const message = byIndex.get(i);
    if (message !== undefined) failures.push({ object: line, message });
    else {
      ops.writes++;
      ops.details.push(line);
    }
  });
  if (failures.length > 0) throw new PartialApplyError('links', failures, ops);
  return ops;
}
