#!/usr/bin/env bash
# Build the Debian 12 (bookworm) virtual-machine image that tests/e2e/vm_host.py boots as a
# remote benchmark host with a kernel of its own: md RAID, device-mapper (LVM), emulated NVMe
# with SMART and pulled plugs are out of reach of this machine's kernel and of containers.
#
# Output, in /var/tmp/innomatrix-vm/:
#   root.img            ext4 root filesystem (sparse), labelled innomatrix-root; VMs boot a
#                       qcow2 overlay of it, so this file is never written by a VM
#   vmlinuz initrd.img  the image's own kernel and initramfs, booted with QEMU's -kernel/-initrd
#   cmdline             the kernel arguments the image needs (root by label, eth0)
#   id_ed25519[.pub]    the key the `bench` user (passwordless sudo) accepts
#   inputs              the hash of this script and of the mirror the image was built from
# Rebuilt only when that hash changes. The guest has no network (QEMU user networking with
# restrict=on), so every package the roles install is in the image already, with apt lists.
#
# The mirror is the host's own, from its apt sources, as in tests/molecule/image.sh.
set -euo pipefail
OUT=/var/tmp/innomatrix-vm
LABEL=innomatrix-root
VM_HOSTNAME=innomatrix-vm
VM_USER=bench
# Room for the roles' builds and results beside the system's 1.5 GB; sparse until used.
SIZE=6G
# The roles' apt installs (collectors, mysql_server for mariadb, sysbench, tpcc), what Ansible
# needs (python3, python3-apt for the apt module, sftp for file transfers), what a booting
# Debian with SSH and DHCP on eth0 needs, and the storage tools the VM exists for.
PACKAGES=(
  linux-image-amd64 initramfs-tools systemd-sysv udev kmod ifupdown isc-dhcp-client iproute2
  openssh-server openssh-sftp-server sudo python3 python3-apt
  mdadm lvm2 thin-provisioning-tools bcache-tools smartmontools nvme-cli xfsprogs e2fsprogs util-linux procps sysstat
  mariadb-server mariadb-client python3-mysqldb sysbench
  build-essential libmariadb-dev libmariadb-dev-compat git xz-utils
)

# One build at a time, and a caller that waited finds the image up to date. vm_host.py takes
# this lock shared while it links a VM's copy of the files, so it never sees half an image.
exec 9>/var/tmp/innomatrix-vm.lock
flock 9

mirror=$(awk '$1 == "URIs:" { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[[ -n "$mirror" ]] || mirror=$(awk '$1 == "deb" && $2 !~ /^\[/ { print $2; exit }' /etc/apt/sources.list)
here=$(dirname "$(readlink -f "$0")")
inputs=$( { cat "$0" "$here/ansiballz_bytecode.py"; echo "$mirror"; } | sha256sum | cut -c1-16)

if [[ "$(cat "$OUT/inputs" 2>/dev/null)" == "$inputs" ]]; then
  echo "VM image $OUT is up to date ($inputs)"
  exit 0
fi

started=$SECONDS
work=$(mktemp -d /var/tmp/innomatrix-vm.build.XXXXXX)
# --one-file-system: never into a mount a killed debootstrap may have left in the root.
trap 'rm -rf --one-file-system "$work"' EXIT
rootfs=$work/rootfs
image=$work/image
mkdir "$image"

echo "debootstrap bookworm from $mirror"
debootstrap --variant=minbase --include="$(IFS=,; echo "${PACKAGES[*]}")" bookworm "$rootfs" "$mirror" \
  >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
echo "debootstrap done after $((SECONDS - started)) s"
in_guest() { chroot "$rootfs" "$@" >>"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }; }

# mariadb-install-db refuses a hostname it cannot resolve, and the guest has no DNS.
echo "$VM_HOSTNAME" >"$rootfs/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$VM_HOSTNAME" \
  >"$rootfs/etc/hosts"
# QEMU's user network answers DHCP; net.ifnames=0 (in cmdline) keeps the name eth0.
printf 'auto lo\niface lo inet loopback\n\nauto eth0\niface eth0 inet dhcp\n' >"$rootfs/etc/network/interfaces"
# Mounted read-write by the initramfs already (rw on the command line): pass 0, no fsck.
printf 'LABEL=%s / ext4 defaults 0 0\n' "$LABEL" >"$rootfs/etc/fstab"
echo "root=LABEL=$LABEL rw net.ifnames=0" >"$image/cmdline"

# The login the tests and Ansible use, as on tests/e2e/remote_hosts.py's containers.
ssh-keygen -q -t ed25519 -N "" -C innomatrix-vm -f "$image/id_ed25519"
in_guest useradd --create-home --shell /bin/bash --password '*' "$VM_USER"
echo "$VM_USER ALL=(ALL) NOPASSWD:ALL" >"$rootfs/etc/sudoers.d/$VM_USER"
chmod 0440 "$rootfs/etc/sudoers.d/$VM_USER"
in_guest visudo -cq -f "/etc/sudoers.d/$VM_USER"
install -d -m 0700 "$rootfs/home/$VM_USER/.ssh"
install -m 0600 "$image/id_ed25519.pub" "$rootfs/home/$VM_USER/.ssh/authorized_keys"
in_guest chown -R "$VM_USER:$VM_USER" "/home/$VM_USER/.ssh"

# Nothing runs on its own in the background of a benchmark or a test: no apt timers (there is
# no network to fetch from anyway), no periodic RAID check, trim, scrub or statistics, no
# SMART daemon polling the disks, and no mdadm monitor (it would mail about every array a test
# degrades). Arrays found on the members are still assembled by udev at boot, as on any Debian
# host: a test that pulls the plug under an array finds it again as a real host would.
# MariaDB is installed, not started: the roles start their own server, as in the containers.
in_guest systemctl mask apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
  e2scrub_all.timer e2scrub_reap.service fstrim.timer sysstat-collect.timer sysstat-summary.timer \
  mdcheck_start.timer mdcheck_continue.timer mdmonitor.service mdmonitor-oneshot.timer \
  smartmontools.service
in_guest systemctl disable mariadb.service

# Every Ansible task ships its module_utils as sources in a zip, compiled afresh at each task:
# over a second of each task's ~5 under TCG. A bytecode cache for them, this test guest's only
# (tests/vm/ansiballz_bytecode.py says how), imported at every Python start by a .pth file.
install -m 0644 "$here/ansiballz_bytecode.py" "$rootfs/usr/lib/python3/dist-packages/innomatrix_ansiballz_bytecode.py"
echo "import innomatrix_ansiballz_bytecode" >"$rootfs/usr/lib/python3/dist-packages/innomatrix-ansiballz-bytecode.pth"
install -d -m 1777 "$rootfs/var/cache/innomatrix-vm-bytecode"

# Package lists as after `apt-get update`, so that the apt module finds every package (installed
# already) without a network; vm_host.py marks them fresh at each boot.
in_guest apt-get update -q
in_guest apt-get clean
echo "configured after $((SECONDS - started)) s"

cp "$rootfs"/boot/vmlinuz-* "$image/vmlinuz"
cp "$rootfs"/boot/initrd.img-* "$image/initrd.img"
mke2fs -q -t ext4 -L "$LABEL" -d "$rootfs" "$image/root.img" "$SIZE" >>"$work/build.log"
echo "$inputs" >"$image/inputs"

# Built beside the old image, so a failed build leaves it whole; vm_host.py reads it only under
# the lock, so the swap need not be atomic for it.
rm -rf "$OUT.old"
if [[ -e "$OUT" ]]; then mv "$OUT" "$OUT.old"; fi
mv "$image" "$OUT"
rm -rf "$OUT.old"
echo "built VM image $OUT ($inputs, root filesystem $(du -sh --apparent-size "$rootfs" | cut -f1)," \
  "$(du -sh "$OUT/root.img" | cut -f1) on disk) in $((SECONDS - started)) s"
