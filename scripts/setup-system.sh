#!/usr/bin/env bash
# Installs the system packages vmio needs, only those that are missing. Debian/Ubuntu, as root or via sudo.
# Usage: scripts/setup-system.sh [base|full]   (full adds Ceph and Chromium for the whole test suite)
set -euo pipefail
level=${1:-full}

need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
want() { have_pkg "$1" || need+=("$1"); }

want fio
want qemu-system-x86
want qemu-utils
want iptables                   # the owner-match rule keeping other users off guests' forwarded fio ports
want busybox-static
want e2fsprogs
want cpio
want zstd
want lz4                        # the guest kernel's payload, unpacked for a PVH boot
want gcc                        # stub libraries for fio's network engines in the guest image
want xz-utils
want procps
want blktrace
want sysstat
want bpftrace                   # [campaign] layers = true: the host block layer traced (docs/layers.md)
want acl                        # setfacl: the security tests grant another user write through a POSIX ACL
have_cmd python3 || need+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
if [ "$level" = full ]; then
  want qemu-block-extra
  want ceph-mon
  want ceph-osd
  want ceph-mgr
  want ceph-common
  want chromium
  want fonts-ipafont-gothic     # Japanese glyphs: the papers' original titles on `vmio reproduce` pages
  want libvirt-clients          # virsh, virt-xml-validate: advised XML checked against libvirt's schema
  want libxml2-utils            # xmllint, which virt-xml-validate runs
  want libvirt-daemon-system    # libvirtd, virtlogd: a TCG domain diagnosed through libvirt
  want libvirt-daemon-driver-qemu
  want qemu-guest-agent         # qemu-ga, laid into libvirt canary domains' initramfs
fi

if [ ${#need[@]} -eq 0 ]; then
  echo "setup-system: all system packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup-system: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
# -o flags keep apt from hanging on locks forever.
timeout 600 $SUDO apt-get update -qq
timeout 1800 $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
