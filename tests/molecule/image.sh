#!/usr/bin/env bash
# Build the Debian 12 images the Molecule scenarios run in. No registry is reachable here, so
# the base is a debootstrap root filesystem imported into podman, and two variants are
# committed on top of it:
#   bookworm          python3 (and python3-apt, which Ansible's apt module needs)
#   bookworm-systemd  + systemd as PID 1
#   bookworm-bench    + the packages the roles install (server, sysbench, collectors), for
#                     the scenarios whose role needs them in place; the roles still run over them;
#                     + openssh-server, so that tests/e2e/remote_hosts.py can make it a remote
#                     host reached over SSH (sshd is not started here: policy-rc.d says no)
# Every image carries a hash of this script and of the mirror, and is rebuilt only when that
# hash changes. The mirror is the host's own, from its apt sources.
set -euo pipefail
export CONTAINERS_CONF="${CONTAINERS_CONF:-$(dirname "$(realpath "$0")")/containers.conf}"
IMAGE=localhost/innomatrix-molecule
VARIANTS=(bookworm bookworm-systemd bookworm-bench)

mirror=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[[ -n "$mirror" ]] || mirror=$(awk '$1 == "deb" && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list)
inputs=$( { cat "$0"; echo "$mirror"; } | sha256sum | cut -c1-16)

built() { podman image inspect --format '{{ index .Labels "innomatrix.inputs" }}' "$IMAGE:$1" 2>/dev/null || true; }
stale=0
for variant in "${VARIANTS[@]}"; do [[ "$(built "$variant")" == "$inputs" ]] || stale=1; done
if (( ! stale )); then
  echo "images $IMAGE:{$(IFS=,; echo "${VARIANTS[*]}")} are up to date ($inputs)"
  exit 0
fi

# Replace only our own images; never prune the machine's.
for variant in "${VARIANTS[@]}"; do podman rmi "$IMAGE:$variant" >/dev/null 2>&1 || true; done
work=$(mktemp -d /var/tmp/innomatrix-image.XXXXXX)
trap 'rm -rf "$work"; podman rm -f innomatrix-image-build >/dev/null 2>&1 || true' EXIT

echo "debootstrap bookworm from $mirror"
debootstrap --variant=minbase --include=python3,python3-apt,sudo bookworm "$work/rootfs" "$mirror" \
  >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
# No package cache and no apt lists: every scenario fetches current lists from the mirror.
rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/var/lib/apt/lists/*
tar -C "$work/rootfs" -c . | podman import -q --change "LABEL innomatrix.inputs=$inputs" - "$IMAGE:bookworm" >/dev/null

# variant NAME CMD PACKAGES...: install on top of the base and commit.
variant() {
  local name=$1 cmd=$2; shift 2
  podman run --name innomatrix-image-build --network host "$IMAGE:bookworm" sh -c "
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d &&
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $* &&
    apt-get clean && rm -rf /var/lib/apt/lists/* && if [ $name = bookworm-systemd ]; then rm /usr/sbin/policy-rc.d; fi" \
    >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
  podman commit -q --change "LABEL innomatrix.inputs=$inputs" --change "CMD $cmd" \
    innomatrix-image-build "$IMAGE:$name" >/dev/null
  podman rm innomatrix-image-build >/dev/null
}
variant bookworm-systemd '["/sbin/init"]' systemd systemd-sysv dbus
variant bookworm-bench '["sleep", "infinity"]' mariadb-server mariadb-client sysbench \
  procps sysstat xfsprogs e2fsprogs util-linux smartmontools openssh-server
echo "built $IMAGE:{$(IFS=,; echo "${VARIANTS[*]}")} ($inputs)"
