import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { renderSVG } from '../../src/graph/render.js';
import { topologyOf } from '../../src/mesh/compute.js';
import { graphDOT, layouts, type Layout } from '../../src/mesh/graph.js';
import { defaultMeshOptions } from '../../src/mesh/options.js';
import { loadSnapshot } from '../../src/backend/snapshot.js';
import { parseCluster, type KubeObject } from '../../src/model/parse.js';
import { snapshotNow } from '../../src/model/ready.js';
import type { Granularity } from '../../src/model/types.js';
import { ensureBuilt, example, kgctl, root } from '../cli/built.js';
import { NOW, node, peer } from '../helpers/cluster.js';
import { assertGolden } from '../helpers/golden.js';

const fixture = join(root, 'test', 'fixtures', 'graph-3x4.yaml');
const fixtureObjects = loadSnapshot(fixture);

function dotOf(
  objects: KubeObject[],
  granularity: Granularity,
  opts: { viewer?: string; layout?: Layout } = {},
): string {
  const cluster = parseCluster(objects);
  const viewer = opts.viewer ?? cluster.nodes.map((n) => n.name).sort()[0]!;
  const t = topologyOf(cluster, viewer, { ...defaultMeshOptions, granularity }, snapshotNow(cluster.nodes));
  return graphDOT(t, { layout: opts.layout ?? 'dot' });
}

/** What the DOT says, read back from the text: cluster membership and edges with their attributes. */
interface ParsedDot {
  clusterOf: Map<string, string>;
  clusterLabels: Map<string, string>;
  nodeAttrs: Map<string, string>;
  edges: { tail: string; head: string; attrs: string }[];
}

const id = String.raw`"((?:[^"\\]|\\.)*)"`;
const unquote = (s: string) => s.replace(/\\(.)/g, '$1');

function parseDot(dot: string): ParsedDot {
  const out: ParsedDot = { clusterOf: new Map(), clusterLabels: new Map(), nodeAttrs: new Map(), edges: [] };
  let cluster: string | null = null;
  for (const line of dot.split('\n')) {
    let m: RegExpMatchArray | null;
    if ((m = line.match(new RegExp(`^  subgraph ${id} \\{$`)))) cluster = unquote(m[1]!);
    else if (line === '  }') cluster = null;
    else if (cluster && (m = line.match(new RegExp(`^    label=${id};$`))))
      out.clusterLabels.set(cluster, unquote(m[1]!));
    // An HTML-like label's lines, read as one: <dc<BR/><FONT …>10.0.1.0/24</FONT>> is "dc 10.0.1.0/24".
    else if (cluster && (m = line.match(/^    label=<(.*)>;$/)))
      out.clusterLabels.set(cluster, m[1]!.replace(/<BR\/>/g, ' ').replace(/<[^>]*>/g, ''));
    else if ((m = line.match(new RegExp(`^    ${id} \\[(.*)\\];$`)))) {
      assert.ok(cluster, `node outside a cluster: ${line}`);
      out.clusterOf.set(unquote(m[1]!), cluster);
      out.nodeAttrs.set(unquote(m[1]!), m[2]!);
    } else if ((m = line.match(new RegExp(`^  ${id} -> ${id} \\[(.*)\\];$`)))) {
      out.edges.push({ tail: unquote(m[1]!), head: unquote(m[2]!), attrs: m[3]! });
    } else assert.doesNotMatch(line, /->/, `an edge line the test cannot read: ${line}`);
  }
  return out;
}

/** How a line looks: grey (in the clear), solid (WireGuard) or dashed (a Peer). */
const style = (attrs: string) => (/color="#a0a0a0"/.test(attrs) ? 'grey' : attrs.match(/style=(\w+)/)?.[1]);
const pairKey = (a: string, b: string) => (a < b ? `${a}|${b}` : `${b}|${a}`);
const choose2 = (n: number) => (n * (n - 1)) / 2;

function assertOneEdgePerPair(g: ParsedDot): void {
  const seen = new Set<string>();
  for (const e of g.edges) {
    assert.notEqual(e.tail, e.head, `${e.tail} is linked to itself`);
    const k = pairKey(e.tail, e.head);
    assert.ok(!seen.has(k), `two edges between ${e.tail} and ${e.head}`);
    seen.add(k);
    assert.ok(g.clusterOf.has(e.tail) && g.clusterOf.has(e.head), `edge to an undeclared node: ${e.tail} -> ${e.head}`);
  }
}

describe('graphDOT: golden output (test/fixtures/graph-3x4.yaml)', () => {
  for (const g of ['cross', 'location', 'full', 'subnet'] as const) {
    test(`${g} granularity`, () => assertGolden(`graph-${g}.dot`, dotOf(fixtureObjects, g)));
  }
  test('cross granularity tuned for fdp', () =>
    assertGolden('graph-cross-fdp.dot', dotOf(fixtureObjects, 'cross', { layout: 'fdp' })));
});

describe('graphDOT: cross granularity, 3 locations x 4 nodes and a Peer', () => {
  const g = parseDot(dotOf(fixtureObjects, 'cross'));
  const nodes = [...g.clusterOf.keys()].filter((v) => v.startsWith('node/'));

  test('a cluster per location plus one for the Peers, labelled with the location', () => {
    assert.deepEqual([...g.clusterLabels.values()], ['aws-eu', 'gcp-us', 'onprem', 'peers']);
    assert.equal(nodes.length, 12);
    for (const n of nodes)
      assert.ok(
        g.clusterOf.get(n)!.endsWith(n.slice('node/'.length).replace(/-\d$/, '')),
        `${n} in ${g.clusterOf.get(n)}`,
      );
  });

  test('exactly one edge per linked pair, none to itself; every pair of nodes is linked', () => {
    assertOneEdgePerPair(g);
    const nodeEdges = g.edges.filter((e) => e.tail.startsWith('node/') && e.head.startsWith('node/'));
    assert.equal(nodeEdges.length, choose2(12), 'cross links every node pair once: in the clear or over WireGuard');
  });

  test('inside a location grey (in the clear), across locations solid (WireGuard): 3 x C(4,2) + 4 x 4 x 3', () => {
    let grey = 0;
    let solid = 0;
    for (const e of g.edges.filter((x) => !x.head.startsWith('peer/'))) {
      const same = g.clusterOf.get(e.tail) === g.clusterOf.get(e.head);
      assert.equal(style(e.attrs), same ? 'grey' : 'solid', `${e.tail} -> ${e.head}`);
      if (same) grey++;
      else solid++;
    }
    assert.equal(grey, 3 * choose2(4));
    assert.equal(solid, 4 * 4 * 3);
  });

  test('the Peer is linked to every node, dashed; all links are undirected', () => {
    const toPeer = g.edges.filter((e) => e.head === 'peer/laptop');
    assert.deepEqual(toPeer.map((e) => e.tail).sort(), nodes.sort());
    for (const e of toPeer) assert.equal(style(e.attrs), 'dashed');
    assert.equal(g.edges.length, 18 + 48 + 12);
    for (const e of g.edges) assert.doesNotMatch(e.attrs, /\bdir=/, 'no edge overrides the undirected default');
  });

  test('outside location granularity no node is drawn as a leader', () => {
    for (const [n, attrs] of g.nodeAttrs) assert.doesNotMatch(attrs, /peripheries|leader/, n);
  });
});

describe('graphDOT: location granularity', () => {
  const g = parseDot(dotOf(fixtureObjects, 'location'));
  const leaders = [...g.nodeAttrs]
    .filter(([, a]) => /peripheries=2/.test(a) && /<I>leader<\/I>/.test(a))
    .map(([n]) => n);

  test('one leader per location, marked', () => {
    // onprem-1 carries the leader annotation; elsewhere the first with a public endpoint leads.
    assert.deepEqual(leaders.sort(), ['node/aws-eu-1', 'node/gcp-us-1', 'node/onprem-1']);
  });

  test('non-leaders link only to their own leader, in the clear; leaders link to each other over WireGuard', () => {
    assertOneEdgePerPair(g);
    for (const n of g.clusterOf.keys()) {
      if (!n.startsWith('node/') || leaders.includes(n)) continue;
      const edges = g.edges.filter((e) => e.tail === n || e.head === n);
      assert.equal(edges.length, 1, `${n}: ${JSON.stringify(edges)}`);
      const other = edges[0]!.tail === n ? edges[0]!.head : edges[0]!.tail;
      assert.ok(leaders.includes(other), `${n} links to ${other}, not a leader`);
      assert.equal(g.clusterOf.get(other), g.clusterOf.get(n), `${n} links to a leader of another location`);
      assert.equal(style(edges[0]!.attrs), 'grey');
    }
    const between = g.edges.filter((e) => leaders.includes(e.tail) && leaders.includes(e.head));
    assert.equal(between.length, 3);
    for (const e of between) assert.equal(style(e.attrs), 'solid');
  });

  test('the Peer is linked to the leaders only', () => {
    const toPeer = g.edges.filter((e) => e.head.startsWith('peer/')).map((e) => e.tail);
    assert.deepEqual(toPeer.sort(), leaders.sort());
  });
});

describe('graphDOT: full granularity', () => {
  test('every pair of nodes over WireGuard, every node to the Peer', () => {
    const g = parseDot(dotOf(fixtureObjects, 'full'));
    assertOneEdgePerPair(g);
    const nodeEdges = g.edges.filter((e) => !e.head.startsWith('peer/'));
    assert.equal(nodeEdges.length, choose2(12));
    for (const e of nodeEdges) assert.equal(style(e.attrs), 'solid');
    assert.equal(g.edges.length - nodeEdges.length, 12);
  });
});

describe('graphDOT: subnet granularity', () => {
  test('a cluster per group: nodes sharing a location and a private network talk in the clear', () => {
    const objects = [
      node('a1', { location: 'dc', internalIP: '10.0.1.1/24', endpoint: '203.0.113.1:51820', podCIDR: '10.42.1.0/24' }),
      node('a2', { location: 'dc', internalIP: '10.0.1.2/24', endpoint: '203.0.113.2:51820', podCIDR: '10.42.2.0/24' }),
      node('b1', { location: 'dc', internalIP: '10.0.2.1/24', endpoint: '203.0.113.3:51820', podCIDR: '10.42.3.0/24' }),
    ];
    const g = parseDot(dotOf(objects, 'subnet'));
    assert.deepEqual([...g.clusterLabels.values()], ['dc 10.0.1.0/24', 'dc 10.0.2.0/24']);
    assertOneEdgePerPair(g);
    const styles = Object.fromEntries(g.edges.map((e) => [pairKey(e.tail, e.head), style(e.attrs)]));
    assert.deepEqual(styles, { 'node/a1|node/a2': 'grey', 'node/a1|node/b1': 'solid', 'node/a2|node/b1': 'solid' });
  });
});

describe('graphDOT: node order', () => {
  test('a location lists its nodes in natural order (office-2 before office-10)', () => {
    const objects = ['office-10', 'office-2', 'office-1', 'office-3'].map((name, i) =>
      node(name, {
        location: 'office',
        internalIP: `192.168.1.${i + 1}/24`,
        endpoint: `203.0.113.${i + 1}:51820`,
        podCIDR: `10.42.${i + 1}.0/24`,
      }),
    );
    const g = parseDot(dotOf(objects, 'cross'));
    assert.deepEqual(
      [...g.clusterOf.keys()],
      ['office-1', 'office-2', 'office-3', 'office-10'].map((n) => `node/${n}`),
    );
  });
});

describe('graphDOT: layouts that ignore clusters', () => {
  for (const layout of ['neato', 'circo'] as const) {
    test(`${layout}: no location boxes around scattered nodes; the location is in each label and colour`, () => {
      const dot = dotOf(fixtureObjects, 'cross', { layout });
      assert.doesNotMatch(dot, /subgraph "cluster_/);
      const g = parseDot(dot);
      const fill = (n: string) => g.nodeAttrs.get(n)!.match(/fillcolor="([^"]+)"/)?.[1];
      assert.match(g.nodeAttrs.get('node/gcp-us-3')!, /<I>gcp-us<\/I>/);
      assert.equal(fill('node/aws-eu-1'), fill('node/aws-eu-4'));
      assert.notEqual(fill('node/aws-eu-1'), fill('node/gcp-us-1'));
      assert.equal(g.edges.length, 78, 'the same links as with dot');
    });
  }
});

describe('graphDOT: stability and escaping', () => {
  test('the same objects in another order, seen from another node, give the same bytes', () => {
    const reversed = [...fixtureObjects].reverse();
    const first = dotOf(fixtureObjects, 'cross');
    assert.equal(dotOf(reversed, 'cross', { viewer: 'onprem-3' }), first);
    assert.equal(dotOf(reversed, 'location', { viewer: 'gcp-us-2' }), dotOf(fixtureObjects, 'location'));
  });

  const odd = [
    node('n1', {
      location: 'lab "b"\\x <y> p&q',
      internalIP: '10.0.0.1/24',
      endpoint: '203.0.113.1:51820',
      podCIDR: '10.42.1.0/24',
    }),
    node('n2', { location: '', internalIP: '10.0.0.2/24', endpoint: '203.0.113.2:51820', podCIDR: '10.42.2.0/24' }),
    peer('p', { allowedIPs: ['10.5.0.1/32'] }),
  ];

  test('quotes, backslashes and HTML characters in names stay text', () => {
    const dot = dotOf(odd, 'cross');
    const g = parseDot(dot);
    assert.deepEqual([...g.clusterLabels.values()], ['(no location)', 'lab "b"\\x <y> p&q', 'peers']);
    assert.match(dot, /label="lab \\"b\\"\\\\x <y> p&q";/);
  });

  test('Graphviz reads the escaped DOT and shows the names as written', async () => {
    const svg = await renderSVG(dotOf(odd, 'cross'), 'dot');
    assert.match(svg, />lab &quot;b&quot;\\x &lt;y&gt; p&amp;q</);
  });
});

/** Graphviz writes "-" as "&#45;" in SVG text; tests read names as written. */
const svgText = (svg: string) => svg.replace(/&#45;/g, '-');

describe('renderSVG', () => {
  for (const layout of layouts) {
    test(`${layout}: an <svg> with the nodes and the Peer`, async () => {
      const svg = svgText(await renderSVG(dotOf(fixtureObjects, 'cross', { layout }), layout));
      assert.match(svg, /<svg[\s>]/);
      for (const n of ['aws-eu-1', 'gcp-us-4', 'onprem-2', 'laptop']) assert.ok(svg.includes(`>${n}</text>`), n);
    });
  }

  for (const layout of ['dot', 'fdp'] as const) {
    test(`${layout}: a <g class="cluster"> per location and one for the Peers`, async () => {
      const svg = svgText(await renderSVG(dotOf(fixtureObjects, 'cross', { layout }), layout));
      const titles = [...svg.matchAll(/<g id="clust\d+" class="cluster">\s*<title>([^<]*)<\/title>/g)].map((m) => m[1]);
      assert.deepEqual(titles.sort(), [
        'cluster_location_aws-eu',
        'cluster_location_gcp-us',
        'cluster_location_onprem',
        'cluster_peers',
      ]);
      assert.equal((svg.match(/class="edge"/g) ?? []).length, 78);
    });
  }
});

describe('kgctl graph (built CLI)', () => {
  before(ensureBuilt);

  test('-o svg prints an SVG and exits 0', () => {
    const r = kgctl('graph', '-o', 'svg', '--cluster', fixture);
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
    assert.match(r.stdout, /^<\?xml[^]*<svg[^]*<\/svg>\s*$/);
    assert.equal((r.stdout.match(/class="cluster"/g) ?? []).length, 4);
  });

  test('default output is the DOT, with the granularity the nodes announce', () => {
    const r = kgctl('graph', '--cluster', fixture);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, dotOf(fixtureObjects, 'cross'));
  });

  test('--mesh-granularity and --layout shape the DOT', () => {
    const r = kgctl('graph', '--cluster', fixture, '--mesh-granularity', 'location', '--layout', 'fdp');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, dotOf(fixtureObjects, 'location', { layout: 'fdp' }));
  });

  test('the bundled example draws', () => {
    const r = kgctl('graph', '-o', 'svg', '--cluster', example);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /<svg[\s>]/);
  });

  test('a bad layout or a cluster without ready nodes is a one-line user error', () => {
    const bad = kgctl('graph', '--layout', 'twopi', '--cluster', fixture);
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /twopi/);
    const stale = kgctl('graph', '--cluster', fixture, '--now', String(NOW + 3600));
    assert.equal(stale.status, 1);
    assert.equal(stale.stdout, '');
    assert.match(
      stale.stderr,
      /^kgctl: nothing to draw: none of the 12 nodes .* is ready \(node "aws-eu-1": its last-seen/,
    );
    assert.equal(stale.stderr.trimEnd().split('\n').length, 1);
  });
});

describe('graphDOT: locations behind NAT (examples/cross.yaml: the office behind a NAT)', () => {
  const objects = loadSnapshot(example);
  for (const g of ['cross', 'location'] as const) {
    test(`${g} granularity: the office's box says so, from the discovered endpoints alone`, () => {
      const labels = [...parseDot(dotOf(objects, g)).clusterLabels.values()];
      assert.deepEqual(labels, ['eu-west-1', 'office (behind NAT)', 'us-east1', 'peers']);
    });
  }
  test('a discovered endpoint equal to the announced one is no NAT', () => {
    // Every node seen exactly where it says it is (the office nodes announce their public address).
    const seen: Record<string, { IP: string; Port: number; Zone: string }> = {};
    for (const n of parseCluster(objects).nodes) {
      if (!n.key || !n.endpoint?.ip) continue;
      seen[n.key] = { IP: n.endpoint.ip.toString(), Port: n.endpoint.port, Zone: '' };
    }
    assert.ok(Object.keys(seen).length > 4);
    const o = objects.map((x) => {
      const a = x.metadata?.annotations;
      if (!a?.['kilo.squat.ai/discovered-endpoints']) return x;
      const annotations = { ...a, 'kilo.squat.ai/discovered-endpoints': JSON.stringify(seen) };
      return { ...x, metadata: { ...x.metadata, annotations } };
    });
    const labels = [...parseDot(dotOf(o, 'cross')).clusterLabels.values()];
    assert.deepEqual(labels, ['eu-west-1', 'office', 'us-east1', 'peers']);
  });
});
