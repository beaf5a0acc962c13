#!/bin/sh
# One family changes nothing (issue 32): the plans scripts/single-family-plans.ts prints here and at
# BASE (default main; a git archive of it in a temporary directory, this checkout's node_modules)
# must be byte-identical. Prints the figures; exits non-zero on any difference.
set -eu
base=${1:-main}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$here" archive "$base" | tar -x -C "$tmp"
ln -s "$here/node_modules" "$tmp/node_modules"
cp "$here/scripts/single-family-plans.ts" "$tmp/scripts/"
export KILO_CONFORMANCE_DIR="${KILO_CONFORMANCE_DIR:-$here/../../shared/conformance/vectors}"
(cd "$tmp" && node --import tsx scripts/single-family-plans.ts >"$tmp/base.txt")
(cd "$here" && node --import tsx scripts/single-family-plans.ts >"$tmp/here.txt")
echo "base $base: $(wc -c <"$tmp/base.txt") bytes; here: $(wc -c <"$tmp/here.txt") bytes"
if cmp -s "$tmp/base.txt" "$tmp/here.txt"; then
  echo "identical"
else
  diff "$tmp/base.txt" "$tmp/here.txt" | head -40
  exit 1
fi
