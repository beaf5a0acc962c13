import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from '../../../src/model/errors.js';
import type { LabNode, LabOptions } from './layout.js';

/**
 * Everything a lab made, written to STATE/lab.json as it is made (synchronously, renamed into
 * place), so `kg lab down` can undo exactly that even after `up` crashed half-way.
 */
export type Made =
  | { kind: 'netns'; name: string }
  /** `start` is the process start time from /proc/PID/stat: a recycled PID is never killed. */
  | { kind: 'process'; pid: number; start: string; what: string }
  | { kind: 'dir'; path: string };

export interface LabState {
  options: LabOptions;
  nodes: LabNode[];
  /** Flags the agents run with beyond the lab's own (e.g. a granularity change). */
  agentFlags: string[];
  /** Next node number (pod CIDR 10.42.K.0/24); never reused within a lab. */
  nextK: number;
  /** The Peer's public key when there is one. */
  peerPublicKey: string | null;
  made: Made[];
}

export const stateFile = (dir: string) => join(dir, 'lab.json');

export class StateDir {
  constructor(
    readonly dir: string,
    readonly state: LabState,
  ) {}

  static create(dir: string, state: LabState): StateDir {
    if (existsSync(stateFile(dir))) {
      throw new Error(
        `a lab is already up in ${dir} (${stateFile(dir)} exists): run \`kg lab down --state-dir ${dir}\` first`,
      );
    }
    // Down removes everything in the directory: never take one that holds anything else.
    if (existsSync(dir) && readdirSync(dir).length > 0)
      throw new Error(`state directory ${dir} is not empty: give a new or empty one`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = new StateDir(dir, state);
    s.save();
    return s;
  }

  static load(dir: string): StateDir {
    const file = stateFile(dir);
    if (!existsSync(file)) throw new UsageError(`no lab in ${dir} (${file} does not exist)`);
    return new StateDir(dir, JSON.parse(readFileSync(file, 'utf8')) as LabState);
  }

  static exists(dir: string): boolean {
    return existsSync(stateFile(dir));
  }

  path(...parts: string[]): string {
    return join(this.dir, ...parts);
  }

  save(): void {
    const file = stateFile(this.dir);
    writeFileSync(`${file}.tmp`, `${JSON.stringify(this.state, null, 1)}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  record(m: Made): void {
    this.state.made.push(m);
    this.save();
  }

  forget(pred: (m: Made) => boolean): void {
    this.state.made = this.state.made.filter((m) => !pred(m));
    this.save();
  }
}

/** A process's start time (field 22 of /proc/PID/stat), or null when it is gone. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether the recorded process is still the one we started. */
export function isAlive(p: { pid: number; start: string }): boolean {
  return processStart(p.pid) === p.start;
}
