#!/usr/bin/env bash
# Build the Debian bookworm image that molecule/hosts runs host roles in, without any image
# registry: debootstrap a minbase rootfs from deb.debian.org and `podman import` it.
#
#   scripts/build_host_image.sh               build localhost/gpu-platform-bookworm:<tag> unless it exists
#   scripts/build_host_image.sh --image-name  print that name and exit
#   scripts/build_host_image.sh --force       rebuild even when the image exists
#
# <tag> is a hash of this script, so any change here builds a new image; the image is also
# tagged :latest. systemd is PID 1 in the containers (molecule.yml), so the image carries
# systemd, systemd-sysv and dbus; apt keeps downloaded packages so that the archive cache
# bind-mounted by molecule survives between converges; sources are `main` only (the host roles
# add contrib/non-free themselves).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRIPT="${REPO_ROOT}/scripts/build_host_image.sh"
IMAGE_REPO="localhost/gpu-platform-bookworm"
TAG="$(sha256sum "${SCRIPT}" | cut -c1-12)"
IMAGE="${IMAGE_REPO}:${TAG}"
SUITE="bookworm"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
# python3-apt: ansible.builtin.apt; procps/iproute2: testinfra process and socket checks.
PACKAGES="python3,python3-apt,systemd,systemd-sysv,dbus,ca-certificates,kmod,pciutils,procps,iproute2"
WORK="${REPO_ROOT}/build/host-image"
CACHE="${REPO_ROOT}/build/debootstrap-cache"

force=false
case "${1:-}" in
  --image-name) echo "${IMAGE}"; exit 0 ;;
  --force) force=true ;;
  "") ;;
  *) echo "usage: $0 [--image-name|--force]" >&2; exit 2 ;;
esac

for tool in podman debootstrap; do
  command -v "${tool}" >/dev/null || { echo "${tool} is missing: run 'make host-deps'" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "debootstrap and rootful podman need root" >&2; exit 1; }

if ! "${force}" && podman image exists "${IMAGE}"; then
  podman tag "${IMAGE}" "${IMAGE_REPO}:latest"
  echo "host image ${IMAGE} already exists (remove it or use --force to rebuild)"
  exit 0
fi

# debootstrap mounts /proc and /sys inside the rootfs and can leave them mounted when it fails:
# unmount before removing, and never let rm cross into another file system.
cleanup() {
  findmnt -rn -o TARGET | grep -F "${WORK}/" | sort -r | xargs -r umount -l || true
  rm -rf --one-file-system "${WORK}"
}

t0=${SECONDS}
rootfs="${WORK}/rootfs"
cleanup
mkdir -p "${rootfs}" "${CACHE}"
trap cleanup EXIT

echo "debootstrap ${SUITE} (minbase + ${PACKAGES}) from ${MIRROR}"
debootstrap --variant=minbase --include="${PACKAGES}" --cache-dir="${CACHE}" \
  "${SUITE}" "${rootfs}" "${MIRROR}" >"${WORK}.debootstrap.log" 2>&1 || {
  tail -n 40 "${WORK}.debootstrap.log" >&2
  exit 1
}
t1=${SECONDS}

# apt: main only, keep downloaded .debs (the archive dir is a shared bind mount in molecule).
cat >"${rootfs}/etc/apt/sources.list" <<EOF
deb ${MIRROR} ${SUITE} main
deb ${MIRROR} ${SUITE}-updates main
deb ${SECURITY_MIRROR} ${SUITE}-security main
EOF
cat >"${rootfs}/etc/apt/apt.conf.d/90gpu-platform-keep-debs" <<'EOF'
Binary::apt::APT::Keep-Downloaded-Packages "true";
APT::Keep-Downloaded-Packages "true";
EOF
cat >"${rootfs}/etc/apt/apt.conf.d/90gpu-platform-noninteractive" <<'EOF'
APT::Install-Recommends "false";
APT::Get::Assume-Yes "true";
Dpkg::Use-Pty "false";
EOF

# systemd as PID 1 in a container: a fresh machine-id on first boot, no units that need real
# hardware or a console, and no apt-daily timers that would take the dpkg lock (or fill the shared
# archive cache) in the middle of a converge. (podman --systemd=always mounts /run, /tmp and the
# cgroup tree.)
: >"${rootfs}/etc/machine-id"
rm -f "${rootfs}/var/lib/dbus/machine-id"
for unit in getty.target console-getty.service systemd-udevd.service systemd-udev-trigger.service \
  systemd-remount-fs.service sys-kernel-debug.mount sys-kernel-tracing.mount \
  dev-hugepages.mount systemd-firstboot.service \
  apt-daily.timer apt-daily.service apt-daily-upgrade.timer apt-daily-upgrade.service; do
  ln -sfn /dev/null "${rootfs}/etc/systemd/system/${unit}"
done
echo "gpu-platform-host" >"${rootfs}/etc/hostname"

# The .debs debootstrap leaves behind, lists and logs do not belong in the image.
rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/cache/apt/*.bin \
  "${rootfs}"/var/lib/apt/lists/* "${rootfs}"/var/log/*.log "${rootfs}"/var/log/apt/*
t2=${SECONDS}

echo "importing ${IMAGE}"
tar -C "${rootfs}" --numeric-owner --xattrs -c . |
  podman import --quiet \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change 'ENV container=podman' \
    --message "debootstrap ${SUITE} minbase, built by scripts/build_host_image.sh" \
    - "${IMAGE}" >/dev/null
podman tag "${IMAGE}" "${IMAGE_REPO}:latest"
t3=${SECONDS}

# Older builds of this image (other script hashes) only take space.
podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=${IMAGE_REPO}" |
  grep -vxF -e "${IMAGE}" -e "${IMAGE_REPO}:latest" | xargs -r podman rmi >/dev/null || true

echo "host image ${IMAGE} built: debootstrap $((t1 - t0))s, configure $((t2 - t1))s," \
  "import $((t3 - t2))s, total $((t3 - t0))s"
