#!/usr/bin/env bash
# make kernel-deb: linux-image and linux-headers .debs of the patched kernel
# (the kernel's own bindeb-pkg) into $BUILD_ROOT/kernel-deb/$KCONFIG/, plus
# linux-libc-dev (the patched uapi). bindeb-pkg makes linux-headers only for a
# config with CONFIG_MODULES: the distro config, not the (module-less) guest one.
#
#   KCONFIG=guest   the guest config, in the object dir make kernel built
#                   ($BUILD_ROOT/obj-guest): bindeb-pkg reuses those objects
#                   (same CC string, same tree), so it costs the packaging,
#                   not a second build. Runs in CI.
#   KCONFIG=distro  Debian's own amd64 config + kernel-patches/config/distro.config
#                   (scripts/kernel-config-distro.sh), for real machines: a full
#                   distro build, thousands of modules; hours on 2 cores (see README).
#
# Takes the same lock as scripts/kernel.sh ($BUILD_ROOT/kernel-$KCONFIG.lock),
# so it never builds in an object dir another build is using.
set -euo pipefail
. "$(dirname "$0")/common.sh"

OUT=$BUILD_ROOT/kernel-deb/$KCONFIG
case "$KCONFIG" in
guest) "$REPO/scripts/kernel.sh" ;;   # the tree, the series and the objects, as make kernel
distro) [ -f "$KSRC/.iou-series" ] || "$REPO/scripts/kernel.sh" ;;  # only the patched tree is needed
*) die "make kernel-deb: KCONFIG=guest or distro, not '$KCONFIG'" ;;
esac

exec 9>"$BUILD_ROOT/kernel-$KCONFIG.lock"
flock 9
if [ "$KCONFIG" = distro ]; then
	"$REPO/scripts/kernel-config-distro.sh"
fi
t0=$(date +%s)
log "bindeb-pkg ($KCONFIG) in $KOBJ"
# bindeb-pkg leaves the packages in the object dir's parent: a scratch dir
# keeps them apart from the build root's own files
rm -f "$BUILD_ROOT"/linux-*.deb "$BUILD_ROOT"/linux-upstream_*
nice -n 10 "${KMAKE[@]}" bindeb-pkg KDEB_SOURCENAME=linux-iou-offload \
	> "$BUILD_ROOT/kernel-deb-$KCONFIG.log" 2>&1 || {
	tail -40 "$BUILD_ROOT/kernel-deb-$KCONFIG.log" >&2
	die "bindeb-pkg failed (log: $BUILD_ROOT/kernel-deb-$KCONFIG.log)"
}
rm -rf "$OUT"
mkdir -p "$OUT"
mv "$BUILD_ROOT"/linux-*.deb "$OUT/"
rm -f "$BUILD_ROOT"/linux-iou-offload_* "$BUILD_ROOT"/linux-upstream_*
log "kernel packages ($KCONFIG) in $(( $(date +%s) - t0 )) s:"
ls -l "$OUT"/*.deb | awk '{ print "   " $NF " (" $5 " bytes)" }'
