/**
 * A kubelet for one pod of a DaemonSet, enough to run kilo-ts's manifests from the built image on a
 * lab node: the pod spec's init containers (in order, each to completion) and containers, each from
 * its own writable copy of the image (`buildah from` + `buildah mount`), with the image's entrypoint,
 * command and args resolved and `$(VAR)` expanded as the kubelet does, the environment (the image's,
 * the Service variables, `value`, `fieldRef`, `configMapKeyRef`), hostPath volumes checked and created
 * per their type, configMap volumes projected, the ServiceAccount's token mounted where in-cluster
 * clients look for it, and the network of the host (hostNetwork: the lab node's namespace).
 *
 * Each container runs in its own mount and PID namespace, chrooted into its root filesystem, with
 * /proc, /sys and /dev as a container runtime gives them (all of the host's devices only when
 * privileged; else containerd's default capabilities). A lab node has no filesystem of its own: each
 * gets a directory standing in for its host's (`hostRoot`); device paths are the machine's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return -- pod specs are untyped YAML */
type Spec = any;

export interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  env: string[];
  workingDir: string;
  labels: Record<string, string>;
}

export function buildah(args: string[]): string {
  const r = spawnSync('buildah', args, { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`buildah ${args.join(' ')} exited with ${r.status}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

export function imageConfig(image: string): ImageConfig {
  const c = JSON.parse(buildah(['inspect', '--type', 'image', image])).OCIv1.config;
  return {
    entrypoint: c.Entrypoint ?? [],
    cmd: c.Cmd ?? [],
    env: c.Env ?? [],
    workingDir: c.WorkingDir || '/',
    labels: c.Labels ?? {},
  };
}

/** What the pod sees of the cluster and of its node. */
export interface PodContext {
  image: string;
  podName: string;
  namespace: string;
  nodeName: string;
  /** The node's address (status.hostIP, and status.podIP on the host network). */
  nodeIP: string;
  /** The lab node's network namespace. */
  netns: string;
  /** The directory standing in for the node's filesystem (hostPath volumes). */
  hostRoot: string;
  /** Per-pod files: projected volumes, logs. */
  podDir: string;
  /** ConfigMaps of the pod's namespace, by name. */
  configMaps: ReadonlyMap<string, Record<string, string>>;
  /** The ServiceAccount's token, as the API server would issue it. */
  serviceAccountToken: string;
  /** Where KUBERNETES_SERVICE_HOST/PORT point (the `kubernetes` Service). */
  apiHost: string;
  apiPort: number;
}

export const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The kubelet's `$(VAR)` expansion: defined names are replaced, `$$` is a `$`, the rest stays. */
export function expand(s: string, env: ReadonlyMap<string, string>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (m, name: string | undefined) =>
    m === '$$' ? '$' : (env.get(name!) ?? m),
  );
}

function fieldValue(path: string, ctx: PodContext, pod: Spec): string {
  switch (path) {
    case 'spec.nodeName':
      return ctx.nodeName;
    case 'metadata.name':
      return ctx.podName;
    case 'metadata.namespace':
      return ctx.namespace;
    case 'spec.serviceAccountName':
      return pod.serviceAccountName ?? 'default';
    case 'status.hostIP':
    case 'status.podIP':
      if (path === 'status.podIP' && !pod.hostNetwork) break;
      return ctx.nodeIP;
  }
  throw new Error(`fieldRef ${path}: not supported by this kubelet`);
}

/** The container's environment, in the kubelet's order: image, Service variables, the container's own. */
export function containerEnv(c: Spec, pod: Spec, ctx: PodContext, img: ImageConfig): Map<string, string> {
  const env = new Map<string, string>();
  for (const kv of img.env) {
    const i = kv.indexOf('=');
    env.set(kv.slice(0, i), kv.slice(i + 1));
  }
  env.set('KUBERNETES_SERVICE_HOST', ctx.apiHost);
  env.set('KUBERNETES_SERVICE_PORT', String(ctx.apiPort));
  env.set('HOSTNAME', pod.hostNetwork ? ctx.nodeName : ctx.podName);
  const own = new Map<string, string>();
  for (const e of c.env ?? []) {
    let value: string;
    if (e.value !== undefined) value = expand(String(e.value), own);
    else if (e.valueFrom?.fieldRef) value = fieldValue(e.valueFrom.fieldRef.fieldPath, ctx, pod);
    else if (e.valueFrom?.configMapKeyRef) {
      const ref = e.valueFrom.configMapKeyRef;
      const v = ctx.configMaps.get(ref.name)?.[ref.key];
      if (v === undefined) throw new Error(`env ${e.name}: ConfigMap ${ref.name} has no key ${ref.key}`);
      value = v;
    } else throw new Error(`env ${e.name}: ${JSON.stringify(e.valueFrom)} is not supported by this kubelet`);
    own.set(e.name, value);
  }
  for (const [k, v] of own) env.set(k, v);
  return env;
}

/** The kubelet's rule: command replaces the entrypoint, args the image's Cmd. */
export function containerArgv(c: Spec, img: ImageConfig, env: ReadonlyMap<string, string>): string[] {
  const argv = c.command
    ? [...c.command, ...(c.args ?? [])]
    : [...img.entrypoint, ...(c.args !== undefined ? c.args : img.cmd)];
  return argv.map((a: string) => expand(a, env));
}

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

/** A hostPath, checked and created as the kubelet does for its `type`. */
function hostPath(v: Spec, ctx: PodContext): string {
  const path: string = v.path;
  const source = path.startsWith('/dev/') ? path : join(ctx.hostRoot, path);
  const type: string = v.type ?? '';
  const st = existsSync(source) ? statSync(source) : null;
  const fail = (what: string) => {
    throw new Error(`hostPath ${path} (type ${type}): ${what}`);
  };
  switch (type) {
    case 'DirectoryOrCreate':
      if (!st) mkdirSync(source, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory()) fail('not a directory');
      break;
    case 'Directory':
      if (!st?.isDirectory()) fail('no directory there');
      break;
    case 'FileOrCreate':
      if (!st) {
        mkdirSync(dirname(source), { recursive: true });
        writeFileSync(source, '', { mode: 0o644 });
      } else if (!st.isFile()) fail('not a file');
      break;
    case 'File':
      if (!st?.isFile()) fail('no file there');
      break;
    case 'CharDevice':
      if (!st?.isCharacterDevice()) fail('no character device there');
      break;
    case '':
      // No check; the container runtime creates a missing source as a directory (containerd does).
      if (!st) mkdirSync(source, { recursive: true, mode: 0o755 });
      break;
    default:
      fail('type not supported by this kubelet');
  }
  return source;
}

/** The container's mounts: its volumeMounts, then the ServiceAccount token (automounted). */
export function containerMounts(c: Spec, pod: Spec, ctx: PodContext): Mount[] {
  const volumes = new Map<string, Spec>((pod.volumes ?? []).map((v: Spec) => [v.name, v]));
  const mounts: Mount[] = [];
  for (const m of c.volumeMounts ?? []) {
    const v = volumes.get(m.name);
    if (!v) throw new Error(`volumeMount ${m.mountPath}: no volume ${m.name}`);
    let source: string;
    if (v.hostPath) source = hostPath(v.hostPath, ctx);
    else if (v.configMap) {
      const data = ctx.configMaps.get(v.configMap.name);
      if (!data) throw new Error(`volume ${v.name}: no ConfigMap ${v.configMap.name} in ${ctx.namespace}`);
      source = join(ctx.podDir, 'volumes', v.name);
      mkdirSync(source, { recursive: true });
      const items: { key: string; path: string }[] =
        v.configMap.items ?? Object.keys(data).map((key) => ({ key, path: key }));
      for (const it of items) {
        if (data[it.key] === undefined) throw new Error(`volume ${v.name}: ConfigMap has no key ${it.key}`);
        mkdirSync(dirname(join(source, it.path)), { recursive: true });
        writeFileSync(join(source, it.path), data[it.key]!, { mode: 0o644 });
      }
    } else if (v.emptyDir) {
      source = join(ctx.podDir, 'volumes', v.name);
      mkdirSync(source, { recursive: true });
    } else throw new Error(`volume ${v.name}: ${Object.keys(v).join(', ')} is not supported by this kubelet`);
    if (m.subPath) source = join(source, m.subPath);
    mounts.push({ source, target: m.mountPath, readOnly: m.readOnly === true });
  }
  if (pod.automountServiceAccountToken !== false && !mounts.some((m) => m.target === serviceAccountDir)) {
    const sa = join(ctx.podDir, 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), ctx.serviceAccountToken);
    writeFileSync(join(sa, 'namespace'), ctx.namespace);
    // The lab's API server is plain HTTP: an empty bundle where the cluster's CA would be.
    writeFileSync(join(sa, 'ca.crt'), '');
    mounts.push({ source: sa, target: serviceAccountDir, readOnly: true });
  }
  return mounts;
}

/** containerd's default capabilities, for containers that are not privileged. */
const defaultCaps =
  'chown,dac_override,fsetid,fowner,mknod,net_raw,setgid,setuid,setfcap,setpcap,net_bind_service,sys_chroot,kill,audit_write';

const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/** The shell run inside the container's new mount and PID namespaces, before it becomes the container. */
function setupScript(root: string, workingDir: string, mounts: readonly Mount[], privileged: boolean): string {
  const lines = ['set -e', `R=${q(root)}`];
  lines.push('mount -t proc proc "$R/proc"', 'mount --rbind /sys "$R/sys"');
  if (privileged) lines.push('mount --rbind /dev "$R/dev"');
  else {
    lines.push('mount -t tmpfs -o nosuid,mode=755 tmpfs "$R/dev"');
    for (const d of ['null', 'zero', 'full', 'random', 'urandom', 'tty'])
      lines.push(`touch "$R/dev/${d}"`, `mount --bind /dev/${d} "$R/dev/${d}"`);
    lines.push('mkdir -p "$R/dev/shm"', 'mount -t tmpfs shm "$R/dev/shm"');
  }
  lines.push('touch "$R/etc/resolv.conf"', 'mount --bind /etc/resolv.conf "$R/etc/resolv.conf"');
  for (const m of mounts) {
    const target = `"$R"${q(m.target)}`;
    const st = statSync(m.source);
    lines.push(
      st.isDirectory() ? `mkdir -p ${target}` : `mkdir -p "$(dirname ${target})" && touch ${target}`,
      `mount --rbind ${q(m.source)} ${target}`,
    );
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${target}`);
  }
  const caps = privileged
    ? []
    : ['setpriv', '--inh-caps=-all', `--bounding-set=-all,+${defaultCaps.replaceAll(',', ',+')}`];
  lines.push(`exec ${[...caps, 'unshare', `--root=${root}`, `--wd=${workingDir}`, '--'].map(q).join(' ')} "$@"`);
  return lines.join('\n');
}

/** A container of the pod: its rootfs (a buildah working container), argv, environment, mounts. */
export class Container {
  readonly ctr: string;
  readonly root: string;
  readonly argv: string[];
  readonly env: Map<string, string>;
  readonly mounts: Mount[];
  readonly log: string;
  pid: number | null = null;

  constructor(
    readonly spec: Spec,
    readonly pod: Spec,
    readonly ctx: PodContext,
    readonly img: ImageConfig,
    readonly privileged = spec.securityContext?.privileged === true,
  ) {
    this.env = containerEnv(spec, pod, ctx, img);
    this.argv = containerArgv(spec, img, this.env);
    this.mounts = containerMounts(spec, pod, ctx);
    this.log = join(ctx.podDir, `${spec.name}.log`);
    this.ctr = buildah(['from', '--pull-never', '--quiet', '--name', `${ctx.podName}-${spec.name}`, ctx.image]);
    this.root = buildah(['mount', this.ctr]);
  }

  /** The full host command: the node's network namespace, new mount and PID namespaces, the chroot. */
  hostArgv(): string[] {
    return [
      'ip',
      'netns',
      'exec',
      this.ctx.netns,
      'unshare',
      '--mount',
      '--propagation=private',
      '--pid',
      '--fork',
      '--kill-child',
      'sh',
      '-c',
      setupScript(this.root, this.spec.workingDir ?? this.img.workingDir, this.mounts, this.privileged),
      'sh',
      ...this.argv,
    ];
  }

  start(): number {
    const fd = openSync(this.log, 'a', 0o600);
    try {
      const argv = this.hostArgv();
      const child = spawn(argv[0]!, argv.slice(1), {
        stdio: ['ignore', fd, fd],
        detached: true,
        env: Object.fromEntries(this.env),
      });
      this.exited = new Promise((resolve) =>
        child.on('exit', (code, signal) => {
          this.exit = code ?? `signal ${signal}`;
          resolve();
        }),
      );
      if (child.pid === undefined) throw new Error(`container ${this.spec.name} did not start`);
      this.pid = child.pid;
      return child.pid;
    } finally {
      closeSync(fd);
    }
  }

  /** Runs to completion (an init container); throws with the end of its log if it fails. */
  async run(timeoutMs = 60_000): Promise<void> {
    this.start();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs)));
    const done = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (done === 'timeout') {
      this.kill();
      throw new Error(`init container ${this.spec.name} ran longer than ${timeoutMs} ms: ${this.tail()}`);
    }
    if (this.exit !== 0) throw new Error(`init container ${this.spec.name} exited with ${this.exit}: ${this.tail()}`);
  }

  /** The exit code (or signal) once the container's process has ended; null while it runs. */
  exit: number | string | null = null;
  private exited: Promise<void> = Promise.resolve();

  tail(lines = 5): string {
    try {
      return readFileSync(this.log, 'utf8').trim().split('\n').slice(-lines).join(' | ');
    } catch {
      return '';
    }
  }

  /** SIGTERM to the container's PID 1, as a runtime stops a container; SIGKILL after the grace period. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.pid === null) return;
    const init = childrenOf(this.pid)[0];
    if (init !== undefined) {
      try {
        process.kill(init, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.kill();
    await this.exited;
  }

  kill(): void {
    // --kill-child: the container's PID 1, and with it its PID namespace, goes with unshare.
    if (this.pid !== null && this.exit === null) {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  remove(): void {
    this.kill();
    spawnSync('buildah', ['rm', this.ctr], { encoding: 'utf8', timeout: 60_000 });
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}
