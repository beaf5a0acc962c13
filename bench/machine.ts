/**
 * Two facts about the machine that move every whole-process figure, printed beside them: how long
 * Node takes to start and exit doing nothing, and what the first touch of fresh memory costs. On
 * some virtual machines a page's first write faults into the hypervisor too (freed memory is handed
 * back to the host): seen here at ~2.5 ms per MiB, against ~0.04 for a second write, so a process
 * that touches 80 MiB pays ~0.2 s that the plain tools, which touch a few, do not.
 */
import { spawnSync } from 'node:child_process';

const touchScript = `
const mib = 64;
const b = Buffer.alloc(mib << 20);
let t = performance.now(); b.fill(1); const first = performance.now() - t;
t = performance.now(); b.fill(2); const second = performance.now() - t;
process.stdout.write(JSON.stringify({ first: first / mib, second: second / mib }));
`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function machineFigures(runs = 5): string {
  const starts: number[] = [];
  const touches: { first: number; second: number }[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ['-e', '0']);
    starts.push(performance.now() - t);
    // A process of its own: fresh memory, not pages this one freed.
    const r = spawnSync(process.execPath, ['-e', touchScript], { encoding: 'utf8' });
    if (r.status === 0) touches.push(JSON.parse(r.stdout) as { first: number; second: number });
  }
  const touch = touches.length
    ? `first write of fresh memory ${median(touches.map((x) => x.first)).toFixed(2)} ms per MiB (a second write ${median(touches.map((x) => x.second)).toFixed(2)})`
    : 'first write of fresh memory: not measured';
  return `\`node -e 0\` ${median(starts).toFixed(0)} ms; ${touch} (medians of ${runs})`;
}
