#!/usr/bin/env bash
# npm run image: builds the kilo-ts image with buildah (no Docker engine needed), as root.
#   IMAGE       the tag (default ghcr.io/kilo-ts/kilo-ts:<package version>)
#   BASE_IMAGE  the base (default: the official node:20-bookworm-slim when it can be pulled, else
#               a local stand-in of the same layout: Debian bookworm from Debian's packages plus
#               this machine's Node.js 20, built once with mmdebstrap and kept in buildah's storage)
# Prints the image's name and size. The npm registry of this machine (`npm config get registry`) and
# the CA file its npm trusts reach the build as secrets: in no layer and in no file of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(node -p "require('./package.json').version")
image=${IMAGE:-ghcr.io/kilo-ts/kilo-ts:$version}
official=docker.io/library/node:20-bookworm-slim
standin=localhost/kilo-ts-base:node20-bookworm
log() { echo "image: $*" >&2; }

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

# Debian bookworm (minbase) from the host's own apt sources, with the host's node and npm where the
# official image has them (/usr/local); the official image's ENV and CMD.
build_standin() {
  local node npm tmp ctr mnt sources=()
  node=$(readlink -f "$(command -v node)")
  npm=$(npm root -g)/npm
  [[ $(node -p 'process.versions.node.split(".")[0]') == 20 ]] || {
    log "the stand-in base needs this machine's node to be Node.js 20 (it is $(node --version))"
    exit 1
  }
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -s $f ]] && sources+=("$f")
  done
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  log "building the stand-in base $standin (mmdebstrap, about 2 minutes)"
  # Without documentation, as Debian's slim images.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook="mkdir -p \"\$1/usr/local/bin\" \"\$1/usr/local/lib/node_modules\"" \
    --customize-hook="cp \"$node\" \"\$1/usr/local/bin/node\"" \
    --customize-hook="cp -a \"$npm\" \"\$1/usr/local/lib/node_modules/npm\"" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npm-cli.js \"\$1/usr/local/bin/npm\"" \
    --customize-hook="ln -s ../lib/node_modules/npm/bin/npx-cli.js \"\$1/usr/local/bin/npx\"" \
    bookworm "$tmp/rootfs.tar" "${sources[@]}"
  ctr=$(buildah from scratch)
  mnt=$(buildah mount "$ctr")
  tar -C "$mnt" -xf "$tmp/rootfs.tar"
  buildah umount "$ctr" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=$(node -p process.versions.node)" --cmd node "$ctr"
  buildah commit --quiet --rm "$ctr" "$standin" >/dev/null
  log "built the stand-in base in ${SECONDS}s"
}

base=${BASE_IMAGE:-}
if [[ -z $base ]]; then
  if have_image "$official" || timeout 60 buildah pull --quiet "$official" >/dev/null 2>&1; then
    base=$official
  else
    log "$official cannot be pulled here: using the local stand-in $standin"
    have_image "$standin" || build_standin
    base=$standin
  fi
fi

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
secrets=$(mktemp -d)
trap 'rm -rf "$secrets"' EXIT
# The registry, and the certificate authorities this machine's npm trusts for it (a TLS-inspecting
# proxy's among them, where there is one).
printf 'registry=%s\n' "$(npm config get registry)" >"$secrets/npmrc"
secret_args=(--secret "id=npmrc,src=$secrets/npmrc")
cafile=$(npm config get cafile)
if [[ $cafile != null && -s $cafile ]]; then
  printf 'cafile=/run/secrets/npmca\n' >>"$secrets/npmrc"
  secret_args+=(--secret "id=npmca,src=$cafile")
fi
log "building $image from $base (commit $commit)"
previous=$(buildah images --noheading --format '{{.ID}}' "$image" 2>/dev/null || true)
# No --layers: a cache of intermediate images would grow with every build (CI starts empty anyway).
buildah build --quiet --isolation chroot --network host \
  --build-arg "BASE_IMAGE=$base" --build-arg "GIT_COMMIT=$commit" \
  "${secret_args[@]}" -t "$image" . >/dev/null
size=$(buildah images --format '{{.Size}}' "$image" | head -1)
current=$(buildah images --noheading --format '{{.ID}}' "$image")
# The image this tag named before, now untagged: ours to remove (unless a container still uses it).
if [[ -n $previous && $previous != "$current" ]]; then buildah rmi "$previous" >/dev/null 2>&1 || true; fi
log "built $image ($size) in ${SECONDS}s"
echo "$image"
