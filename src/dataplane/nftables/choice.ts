import type { Firewall } from '../../mesh/types.js';
import { UsageError } from '../../model/errors.js';
import { ExecError, type Exec } from '../exec.js';
import type { DiffAgainst, FirewallTables, FirewallWritten, Ops } from '../types.js';
import { ForeignTableError, NftablesUnavailableError, readKiloTable, removeKiloTable } from './tables.js';
import type { FirewallBackend, FirewallFlag } from '../firewall-flag.js';

export { firewallFlags, type FirewallBackend, type FirewallFlag } from '../firewall-flag.js';

export interface FirewallChoice {
  backend: FirewallBackend;
  /** Why, for the log line at start. */
  reason: string;
  /** Kilo's nftables table is on the machine (a node that ran the nftables backend). */
  nftablesInUse: boolean;
}

/** The chosen backend cannot run on this host: said once at start, before anything is written. */
export class FirewallUnavailableError extends UsageError {
  constructor(message: string) {
    super(`--firewall: ${message}`);
    this.name = 'FirewallUnavailableError';
  }
}

type NftState = { usable: true; kilo: boolean } | { usable: false; why: string; foreign: boolean };

async function nftState(exec: Exec): Promise<NftState> {
  try {
    return { usable: true, kilo: (await readKiloTable(exec)) !== null };
  } catch (e) {
    if (e instanceof NftablesUnavailableError) return { usable: false, why: e.message, foreign: false };
    if (e instanceof ForeignTableError) return { usable: false, why: e.message, foreign: true };
    throw e;
  }
}

/** Whether an iptables command is installed (it may be legacy or nf_tables). */
async function iptablesPresent(exec: Exec): Promise<boolean> {
  try {
    await exec.run(['iptables', '-V']);
    return true;
  } catch (e) {
    if (e instanceof ExecError) return false;
    throw e;
  }
}

/**
 * The backend for --firewall. `auto`, in this order: nftables where Kilo's nftables table is
 * already there (the node ran --firewall=nftables); iptables where iptables is installed (every
 * node that ran kilo-ts before keeps what it had: moving to nftables is a choice, made once with
 * --firewall=nftables, which auto then keeps); nftables where iptables is absent and nft works.
 * A forced backend the host cannot run is a FirewallUnavailableError, before anything is written.
 */
export async function chooseFirewall(exec: Exec, flag: FirewallFlag): Promise<FirewallChoice> {
  const [nft, iptables] = await Promise.all([nftState(exec), iptablesPresent(exec)]);
  const nftablesInUse = nft.usable && nft.kilo;
  const pick = (backend: FirewallBackend, reason: string): FirewallChoice => ({ backend, reason, nftablesInUse });
  if (flag === 'nftables') {
    if (!nft.usable) throw new FirewallUnavailableError(nft.why);
    return pick('nftables', 'given');
  }
  if (flag === 'iptables') {
    if (!iptables)
      throw new FirewallUnavailableError('iptables is not installed on this host; run with --firewall=nftables');
    return pick('iptables', 'given');
  }
  if (nftablesInUse) return pick('nftables', "auto: Kilo's nftables table is in use");
  if (iptables) return pick('iptables', 'auto: iptables is installed');
  if (nft.usable) return pick('nftables', 'auto: iptables is not installed and nft works');
  throw new FirewallUnavailableError(
    `neither backend can run here: ${nft.usable ? '' : nft.why}; iptables is not installed`,
  );
}

/**
 * The iptables backend on a node that ran the nftables one: Kilo's nftables table is removed whole
 * once the first iptables reconcile has written (so the node is never without a firewall between
 * the two), and on clean-up.
 */
export function retiringNftables(tables: FirewallTables, exec: Exec): FirewallTables {
  let retired = false;
  const retire = async (): Promise<string[]> => {
    try {
      return await removeKiloTable(exec);
    } catch (e) {
      if (e instanceof NftablesUnavailableError || e instanceof ForeignTableError) return [];
      throw e;
    }
  };
  const merged = (ops: Ops, more: string[]): Ops => ({
    writes: ops.writes + more.length,
    details: [...ops.details, ...more],
  });
  return {
    reconcile: async (fw: Firewall, options?: DiffAgainst<FirewallWritten>) => {
      const ops = await tables.reconcile(fw, options);
      if (retired) return ops;
      retired = true;
      return merged(ops, await retire());
    },
    cleanup: async () => merged(await tables.cleanup(), await retire()),
    read: () => tables.read(),
    readRelayed: () => tables.readRelayed(),
  };
}
