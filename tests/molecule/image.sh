#!/usr/bin/env bash
# Build the Debian images the Molecule scenarios run in, for two releases: Debian 12 (bookworm,
# MariaDB 10.11) and Debian 13 (trixie, MariaDB 11.8), so that a role can be tested against
# two server major versions. No registry is reachable here, so each release's base is a
# debootstrap root filesystem imported into podman, and two variants are committed on top of it:
#   RELEASE          python3 (and python3-apt, which Ansible's apt module needs)
#   RELEASE-systemd  + systemd as PID 1
#   RELEASE-bench    + the packages the roles install (server, sysbench, collectors), for
#                    the scenarios whose role needs them in place; the roles still run over them;
#                    + openssh-server, so that tests/e2e/remote_hosts.py can make it a remote
#                    host reached over SSH (sshd is not started here: policy-rc.d says no)
# hence bookworm, bookworm-systemd, bookworm-bench, trixie, trixie-systemd, trixie-bench; and
#   trixie-mysql     Oracle MySQL 9.7 from Debian sid (the only MySQL reachable here), then the
#                    bench packages: a bench host with MySQL already installed. Debian's sysbench
#                    needs mariadb-common (through libmariadb3), which sid's mysql-server
#                    metapackage conflicts with, so installing sysbench removes that metapackage
#                    and keeps the server itself (mysql-server-core), the mysql account and
#                    /etc/mysql — as apt does on a user's sid host. The mirror's sid Release is
#                    past its Valid-Until: this image, never a user's host, tells apt to accept it.
# Every image carries a hash of this script and of the mirror, and all are rebuilt only when
# that hash changes. The mirror is the host's own, from its apt sources; Debian 12's
# debootstrap already knows trixie (its script is a link to sid's).
set -euo pipefail
export CONTAINERS_CONF="${CONTAINERS_CONF:-$(dirname "$(realpath "$0")")/containers.conf}"
IMAGE=localhost/innomatrix-molecule
RELEASES=(bookworm trixie)
VARIANTS=()
for release in "${RELEASES[@]}"; do VARIANTS+=("$release" "$release-systemd" "$release-bench"); done
VARIANTS+=(trixie-mysql)

# Molecule and the e2e tests both run this script, possibly at once on this shared machine:
# one build at a time (they would fight over the build container's name), and a caller that
# waited finds the images up to date.
exec 9>/var/tmp/innomatrix-image.lock
flock 9

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

# base RELEASE: debootstrap it from the mirror and import it as $IMAGE:RELEASE.
base() {
  local release=$1
  echo "debootstrap $release from $mirror"
  debootstrap --variant=minbase --include=python3,python3-apt,sudo "$release" "$work/rootfs" "$mirror" \
    >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
  # No package cache and no apt lists: every scenario fetches current lists from the mirror.
  rm -rf "$work"/rootfs/var/cache/apt/archives/*.deb "$work"/rootfs/var/cache/apt/*.bin "$work"/rootfs/var/lib/apt/lists/*
  tar -C "$work/rootfs" -c . | podman import -q --change "LABEL innomatrix.inputs=$inputs" - "$IMAGE:$release" >/dev/null
  rm -rf "$work/rootfs"
}

# variant RELEASE KIND CMD PACKAGES...: install PACKAGES on top of $IMAGE:RELEASE and commit it
# as $IMAGE:RELEASE-KIND. Packages may not start services while they install (no init runs
# them here); the systemd variant then drops that rule, since there systemd starts and enables
# the packaged services as on a real host. Elsewhere it stays: no init would run them, and the
# scenarios and tests start what they need (mariadbd, sshd) themselves.
# SOURCES, if set, is a shell command run first (extra apt sources); THEN, if set, one run after
# the install (a second install that must not be resolved together with the first).
variant() {
  local release=$1 kind=$2 cmd=$3; shift 3
  podman run --name innomatrix-image-build --network host "$IMAGE:$release" sh -c "
    ${SOURCES:-true} &&
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d &&
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $* &&
    ${THEN:-true} &&
    apt-get clean && rm -rf /var/lib/apt/lists/* && if [ $kind = systemd ]; then rm /usr/sbin/policy-rc.d; fi" \
    >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
  podman commit -q --change "LABEL innomatrix.inputs=$inputs" --change "CMD $cmd" \
    innomatrix-image-build "$IMAGE:$release-$kind" >/dev/null
  podman rm innomatrix-image-build >/dev/null
}

BENCH_TOOLS="sysbench procps sysstat xfsprogs e2fsprogs util-linux smartmontools openssh-server python3-mysqldb"
for release in "${RELEASES[@]}"; do
  base "$release"
  variant "$release" systemd '["/sbin/init"]' systemd systemd-sysv dbus
  variant "$release" bench '["sleep", "infinity"]' mariadb-server mariadb-client $BENCH_TOOLS
done
SOURCES="echo 'deb $mirror sid main' >/etc/apt/sources.list.d/sid.list &&
  echo 'Acquire::Check-Valid-Until \"false\";' >/etc/apt/apt.conf.d/99sid-valid-until" \
THEN="apt-mark manual mysql-server-core mysql-client-core >/dev/null &&
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $BENCH_TOOLS" \
  variant trixie mysql '["sleep", "infinity"]' -t sid mysql-server mysql-client
echo "built $IMAGE:{$(IFS=,; echo "${VARIANTS[*]}")} ($inputs)"
