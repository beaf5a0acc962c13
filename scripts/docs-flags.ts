/**
 * Flag tables for docs/, generated from the commander definitions so the docs cannot drift.
 * A doc marks each table with
 *
 *   <!-- BEGIN FLAGS: kg run -->
 *   …generated…
 *   <!-- END FLAGS -->
 *
 * Usage: node --import tsx scripts/docs-flags.ts          prints every command's table
 *        node --import tsx scripts/docs-flags.ts --write  rewrites the tables in docs/*.md
 *        node --import tsx scripts/docs-flags.ts --check  exits 1 when a table is stale
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import { kgProgram } from '../src/cli/kg.js';
import { kgctlProgram } from '../src/cli/kgctl.js';
import { labCommand } from '../packages/lab/src/command.js';

export const docsDir = join(import.meta.dirname, '..', 'docs');

/** Every command with options, by its path ("kg run", "kgctl showconf node"). */
export function commands(): Map<string, Command> {
  const out = new Map<string, Command>();
  const walk = (cmd: Command, prefix: string) => {
    const path = prefix ? `${prefix} ${cmd.name()}` : cmd.name();
    if (cmd.options.length > 0) out.set(path, cmd);
    for (const sub of cmd.commands) walk(sub, path);
  };
  walk(kgProgram(), '');
  // kg registers `lab` lazily (its definition loads the Kubernetes client); document the real one.
  walk(labCommand(), 'kg');
  walk(kgctlProgram(), '');
  return out;
}

function defaultOf(o: Option): string {
  if (o.defaultValueDescription !== undefined) return o.defaultValueDescription;
  const v: unknown = o.defaultValue;
  if (v === undefined) return '';
  if (Array.isArray(v)) return v.length === 0 ? 'none' : v.join(', ');
  return String(v);
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The Markdown table of one command's flags, in definition order, aligned as prettier aligns it. */
export function flagTable(cmd: Command): string {
  const rows = cmd.options
    .filter((o) => !o.hidden)
    .map((o) => {
      const choices = o.argChoices ? ` (${o.argChoices.join(', ')})` : '';
      const d = defaultOf(o);
      return [`\`${cell(o.flags)}\``, d === '' ? '' : `\`${cell(d)}\``, `${cell(o.description)}${cell(choices)}`];
    });
  const all = [['flag', 'default', 'meaning'], ...rows];
  const widths = [0, 1, 2].map((i) => Math.max(3, ...all.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(all[0]!), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const block = /<!-- BEGIN FLAGS: ([^>]+?) -->\n[\s\S]*?<!-- END FLAGS -->/g;

/** A doc's text with every marked table regenerated. @throws naming an unknown command. */
export function renderDoc(text: string, file: string, all = commands()): string {
  return text.replace(block, (_m, path: string) => {
    const cmd = all.get(path);
    if (!cmd) throw new Error(`${file}: no command ${JSON.stringify(path)} (known: ${[...all.keys()].join(', ')})`);
    return `<!-- BEGIN FLAGS: ${path} -->\n\n${flagTable(cmd)}\n\n<!-- END FLAGS -->`;
  });
}

export function docFiles(): string[] {
  return readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(docsDir, f));
}

function main(args: string[]): void {
  const all = commands();
  if (args.includes('--write') || args.includes('--check')) {
    let stale = 0;
    for (const file of docFiles()) {
      const text = readFileSync(file, 'utf8');
      const next = renderDoc(text, file, all);
      if (next === text) continue;
      stale++;
      if (args.includes('--write')) writeFileSync(file, next);
      else process.stderr.write(`${file}: flag tables are stale\n`);
    }
    if (args.includes('--check') && stale > 0) process.exitCode = 1;
    return;
  }
  for (const [path, cmd] of all) process.stdout.write(`## ${path}\n\n${flagTable(cmd)}\n\n`);
}

if (process.argv[1] && import.meta.filename === process.argv[1]) main(process.argv.slice(2));
