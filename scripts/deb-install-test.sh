#!/usr/bin/env bash
# The packages' install, remove and purge, in a scratch copy of the guest's
# mkosi base image (dpkg --root: maintainer scripts run chrooted there;
# nothing is installed on this machine, no systemd is asked to do anything).
# Checks: the three packages install (iou-offload-tests' Depends are in the
# base), the files and the conffile are in place, the unit is installed and
# not enabled, the demo unit is enabled for iou-offloadd; remove keeps the
# conffile and /var/lib/iou-offload; purge drops both. Prints TAP and a summary.
# Run by make deb after lintian (seconds).
set -uo pipefail
. "$(dirname "$0")/common.sh"
. "$REPO/tests/lib/tap.sh"

# the base image is not replaced under us (tests/vm/build-image.sh holds the
# lock exclusively while it builds a new base and deletes the old one): take
# the lock first, then pick the base, or a base picked while a new one is
# being built is deleted before it is copied
[ -d "$BUILD_ROOT/image" ] || { echo "ok 1 - package install/remove # SKIP no guest base image yet (make image)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
exec 8>"$BUILD_ROOT/image/.lock"
flock -s 8
base=$(ls -d "$BUILD_ROOT"/image/base-* 2>/dev/null | head -1)
[ -n "$base" ] || { echo "ok 1 - package install/remove # SKIP no guest base image yet (make image)"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
[ -s "$base/var/lib/dpkg/status" ] && [ -x "$base/usr/bin/dpkg-query" ] ||
	die "$base is not a complete base image (no dpkg database): rm -rf it and run make image"
debs=("$BUILD_ROOT"/deb/iou-offload_*_amd64.deb "$BUILD_ROOT"/deb/iou-offload-demo_*_all.deb
	"$BUILD_ROOT"/deb/iou-offload-tests_*_amd64.deb)
root=$BUILD_ROOT/deb/root
rm -rf "$root"
cp -al "$base" "$root"
for d in var/lib/dpkg var/log etc var/lib/systemd; do
	rm -rf "${root:?}/$d"
	cp -a "$base/$d" "$root/$d"
done
trap 'rm -rf "$root"' EXIT
in_root() { chroot "$root" "$@"; }
# dpkg ARGS: dpkg on the scratch root, its output in a log (TAP stays clean)
dpkg_root() { dpkg --root="$root" --force-unsafe-io "$@" >> "$BUILD_ROOT/deb/install-test.log" 2>&1; }
status() { in_root dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true; }
: > "$BUILD_ROOT/deb/install-test.log"

check "dpkg -i iou-offload iou-offload-demo iou-offload-tests" dpkg_root -i "${debs[@]}"
check "iou-offload installed ($(status iou-offload))" test "$(status iou-offload)" = "install ok installed"
check "iou-offload-tests installed: its Depends are in the guest base ($(status iou-offload-tests))" \
	test "$(status iou-offload-tests)" = "install ok installed"
check "/usr/sbin/iou-offloadd runs in the scratch root ($(in_root /usr/sbin/iou-offloadd --version 2>&1))" in_root /usr/sbin/iou-offloadd --version
check "/etc/iou-offloadd.conf is a conffile" sh -c "chroot '$root' dpkg-query -W -f='\${Conffiles}' iou-offload | grep -q ' /etc/iou-offloadd.conf '"
check "the unit is in /lib/systemd/system" test -f "$root/lib/systemd/system/iou-offloadd.service"
check "iou-offloadd.service is not enabled (no WantedBy link)" test ! -e "$root/etc/systemd/system/multi-user.target.wants/iou-offloadd.service"
check "the demo data unit is enabled for iou-offloadd" test -L "$root/etc/systemd/system/iou-offloadd.service.wants/iou-offload-demo-data.service"

# the state a running daemon leaves, and a local edit of the conffile
mkdir -p "$root/var/lib/iou-offload"
echo checkpoint > "$root/var/lib/iou-offload/copy.ckpt"
echo "# local edit" >> "$root/etc/iou-offloadd.conf"
check "dpkg -r iou-offload-tests iou-offload-demo iou-offload" dpkg_root -r iou-offload-tests iou-offload-demo iou-offload
check "remove: the binary is gone (unit stop: prerm, checked in the guest by the package suite)" test ! -e "$root/usr/sbin/iou-offloadd"
check "remove: the unit file is gone" test ! -e "$root/lib/systemd/system/iou-offloadd.service"
check "remove: the edited conffile is kept" grep -q "local edit" "$root/etc/iou-offloadd.conf"
check "remove: /var/lib/iou-offload is kept" test -f "$root/var/lib/iou-offload/copy.ckpt"
check "dpkg -P iou-offload" dpkg_root -P iou-offload
check "purge: the conffile is gone" test ! -e "$root/etc/iou-offloadd.conf"
check "purge: /var/lib/iou-offload is gone" test ! -e "$root/var/lib/iou-offload"
check "purge: iou-offload is not installed ($(status iou-offload))" test "$(status iou-offload)" != "install ok installed"
check "purge: no maintainer scripts or lists left" sh -c "! ls '$root'/var/lib/dpkg/info/iou-offload.* 2>/dev/null"
plan
summary
tap_status
