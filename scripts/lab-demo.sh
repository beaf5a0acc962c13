#!/usr/bin/env bash
# The main job on one machine: a 3-location cross mesh of network namespaces (location 3 behind a
# NAT gateway, a Peer outside the cluster), one real `kg` per node with wireguard-go, the test
# Kubernetes API server. Shows the pod→pod connectivity matrix, how one node routes (its own
# location over the LAN, the others over kilo0) and writes the SVG graph, then tears everything
# down — also when something fails or on Ctrl-C. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "lab-demo: needs root (it creates network namespaces); try: sudo $0" >&2
  exit 1
fi
missing=""
for tool in ip iptables iptables-restore wg wireguard-go ping; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "lab-demo: missing:$missing — apt-get update && apt-get install -y $(scripts/system-packages.sh runtime dev)" >&2
  exit 1
fi
[ -f dist/cli/kg.js ] || npm run build >/dev/null
state=${KILO_LAB_STATE:-/tmp/kilo-lab-demo-$$}
svg=${KILO_DEMO_SVG:-kilo-lab.svg}
down() { bin/kg lab down --state-dir "$state" >/dev/null 2>&1 || true; }
trap down EXIT
trap 'exit 130' INT TERM
# up returns once the agents run; show waits for the mesh, then prints it (up alone would also
# print how to tear down, which this script does itself).
bin/kg lab up --locations 3 --nodes 2 --granularity cross --nat-location 3 --peer --state-dir "$state" --no-wait
bin/kg lab show --state-dir "$state" --graph "$svg"
echo
bin/kg lab status --state-dir "$state"
echo
echo "== tearing down (bin/kg lab down --state-dir $state)"
down
trap - EXIT
echo "done: the lab is gone; the graph is in $svg. To keep a lab up and look around, see README (bin/kg lab up)."
