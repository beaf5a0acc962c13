import type { Layout } from '../mesh/graph.js';

/**
 * Lays out DOT text and returns SVG, in-process (Graphviz compiled to WebAssembly): no system
 * `dot` needed. The module is imported on first use so commands that never draw do not load it.
 */
export async function renderSVG(dot: string, layout: Layout): Promise<string> {
  const { Graphviz } = await import('@hpcc-js/wasm-graphviz');
  const graphviz = await Graphviz.load();
  return graphviz.layout(dot, 'svg', layout);
}
