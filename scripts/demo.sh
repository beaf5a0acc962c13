#!/usr/bin/env bash
# The main job without a cluster: what the agent on one node of examples/cross.yaml would program
# (cross granularity: direct routes inside a location, a WireGuard tunnel per node pair across),
# and the mesh as an SVG graph.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/cli/kgctl.js ] || npm run build >/dev/null
snapshot=examples/cross.yaml
node=$(node -e "
  const y = require('yaml');
  const items = y.parse(require('fs').readFileSync('$snapshot', 'utf8')).items;
  console.log(items.find((o) => o.kind === 'Node').metadata.name);")
echo "== bin/kgctl plan $node --cluster $snapshot -o text"
bin/kgctl plan "$node" --cluster "$snapshot" -o text
out=${KILO_DEMO_SVG:-kilo-cross.svg}
bin/kgctl graph -o svg --cluster "$snapshot" > "$out"
echo "== bin/kgctl graph -o svg --cluster $snapshot > $out ($(($(wc -c < "$out") / 1024)) KiB)"
echo "done: open $out in a browser; npm run demo (root) runs the same mesh for real."
