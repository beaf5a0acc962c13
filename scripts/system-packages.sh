#!/bin/sh
# Prints the Debian packages of the given roles (runtime, image, dev) from system-packages.txt, one line.
# Usage: scripts/system-packages.sh ROLE...   (used by .ci/run and the Dockerfile)
set -eu
list="$(dirname "$0")/../system-packages.txt"
[ $# -gt 0 ] || { echo "usage: $0 ROLE... (runtime, image, dev)" >&2; exit 2; }
awk -v roles=" $* " '!/^#/ && NF >= 2 && index(roles, " " $2 " ") { printf "%s%s", sep, $1; sep = " " } END { print "" }' "$list"
