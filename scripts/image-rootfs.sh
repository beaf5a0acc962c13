#!/bin/sh
# The image's root filesystem (the Dockerfile's `system` stage): from a Debian with the runtime and
# image rows of system-packages.txt installed, copies into ROOTFS only what kg and the manifests run,
# with the shared libraries those load, instead of a whole Debian (docs/image.md):
#   - the files of the packages kg drives (their documentation, manuals and translations left out);
#   - /bin/sh (dash: kg's command helper, the install-cni init container) and the few coreutils the
#     init container and bin/kg's #! line use (cp, rm, mv, env, cat) or a shell in the pod wants;
#   - the CNI plugins the manifests' install-cni copies to the host, not the package's other twelve;
#   - node (stripped of its symbols: 99 → 86 MB; V8's code cache does not depend on them), the
#     certificate bundle, the alternatives (iptables → iptables-nft), root's passwd/group lines,
#     os-release and nsswitch.conf;
#   - every library each of those ELF files needs (ldd), and ld.so's cache for them.
# No dpkg, apt, perl or bash: nothing in the image installs anything.
# Usage: scripts/image-rootfs.sh ROOTFS NODE   (NODE: the node binary the build stage trained with)
set -eu
rootfs=$1
node=$2
here=$(dirname "$0")

# What kg runs (system-packages.txt's runtime row, but for ca-certificates: of that only the bundle
# its script made is copied, below), and the shell.
packages="$("$here/system-packages.sh" runtime | tr ' ' '\n' | grep -vx ca-certificates | tr '\n' ' ') dash"
plugins="bridge host-local portmap loopback"
coreutils="cat cp env ln ls mkdir mv rm sleep"

mkdir -p "$rootfs"
# Debian bookworm's merged /usr: /bin, /sbin and /lib are links into /usr, as on the base.
mkdir -p "$rootfs/usr/bin" "$rootfs/usr/sbin" "$rootfs/usr/lib" "$rootfs/usr/lib64" "$rootfs/usr/local/bin"
for d in bin sbin lib lib64; do ln -sfn "usr/$d" "$rootfs/$d"; done
mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/dev" "$rootfs/proc" "$rootfs/sys" "$rootfs/run" "$rootfs/root" \
  "$rootfs/var/lib" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
chmod 0700 "$rootfs/root"
ln -sfn /run "$rootfs/var/run"

list=$(mktemp)
trap 'rm -f "$list" "$list.real"' EXIT

# A path as it is on the merged /usr (dpkg lists /bin/dash, /sbin/modprobe: the files are in /usr).
canonical() { echo "$(readlink -f "$(dirname "$1")")/$(basename "$1")"; }
# Copies each path of $list (a file, or a link as a link) to the same place under $rootfs.
copy_list() {
  while IFS= read -r p; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    # Directories come with their files (and /bin, a link to one, is made above).
    [ -d "$p" ] && continue
    c=$(canonical "$p")
    mkdir -p "$rootfs$(dirname "$c")"
    cp -a "$c" "$rootfs$c"
  done <"$list"
}

dpkg-query -L $packages | grep -Ev '^/usr/share/(doc|man|info|locale|lintian|bug|bash-completion|zsh|fish)/' >"$list"
for f in $coreutils; do echo "/usr/bin/$f"; done >>"$list"
for f in $plugins; do echo "/usr/lib/cni/$f"; done >>"$list"
# Which Debian this is (os-release), how names resolve (/etc/hosts first, as on the base), ld.so's
# configuration, the protocol and service names iptables and nft may read.
for f in /etc/os-release /usr/lib/os-release /etc/debian_version /etc/nsswitch.conf /etc/passwd /etc/group \
  /etc/protocols /etc/services /etc/ld.so.conf /etc/ld.so.conf.d/*; do
  echo "$f"
done >>"$list"
copy_list
for f in $plugins; do [ -x "$rootfs/usr/lib/cni/$f" ] || { echo "image-rootfs: no CNI plugin $f" >&2; exit 1; }; done
# Only root's and nobody's lines: kg runs as root; the rest are Debian's system users.
grep -E '^(root|nobody):' /etc/passwd >"$rootfs/etc/passwd"
grep -E '^(root|nogroup):' /etc/group >"$rootfs/etc/group"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"

# The alternatives the packages' scripts set (iptables → iptables-nft, …) whose choice was copied.
mkdir -p "$rootfs/etc/alternatives"
for alt in /etc/alternatives/*; do
  if [ -e "$rootfs$(readlink -f "$alt")" ]; then
    cp -a "$alt" "$rootfs/etc/alternatives/"
    for link in /usr/bin/* /usr/sbin/*; do
      if [ -L "$link" ] && [ "$(readlink "$link")" = "$alt" ]; then cp -a "$link" "$rootfs$link"; fi
    done
  fi
done

cp "$node" "$rootfs/usr/local/bin/node"
strip "$rootfs/usr/local/bin/node"

elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# Every library an ELF file of the root needs, as the system resolves it (the link and its target),
# and the dynamic loader; extensions loaded by name (iptables' xtables/*.so) are files of their
# package, copied above, and their own libraries come with them here.
find "$rootfs" -type f | while IFS= read -r f; do
  if elf "$f"; then
    ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
  fi
done | sort -u >"$list"
while IFS= read -r lib; do readlink -f "$lib"; done <"$list" >"$list.real"
cat "$list.real" >>"$list"
rm -f "$list.real"
copy_list
ldconfig -r "$rootfs"
rm -rf "$rootfs/var/cache/ldconfig"

# Nothing left unresolved: each ELF file's libraries, looked up inside the root by its own loader.
loader=$(ldd "$node" | sed -n 's/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')
missing=$(find "$rootfs" -type f | while IFS= read -r f; do
  # A static one (the Go programs) is not the loader's to list; one whose library the system lacks
  # too is a plugin of a package's recommended extra, as it was on the base (tc's q_atm.so, libatm1).
  if elf "$f" && ldd "$f" 2>/dev/null | grep -q '=>' && ! ldd "$f" 2>/dev/null | grep -q 'not found'; then
    chroot "$rootfs" "$loader" --list "${f#"$rootfs"}" 2>&1 | grep -E 'not found|No such file' | sed "s|^|${f#"$rootfs"}: |" || true
  fi
done)
if [ -n "$missing" ]; then
  echo "image-rootfs: libraries missing from the root:" >&2
  echo "$missing" >&2
  exit 1
fi
