#!/usr/bin/env bash
# make kernel-deb: .debs of the patched kernel (the kernel's own bindeb-pkg)
# into $BUILD_ROOT/kernel-deb/$KCONFIG/: linux-image-<release> (and its -dbg
# package), linux-libc-dev (the patched uapi) and, for a config with
# CONFIG_MODULES, linux-headers-<release>. bindeb-pkg (6.12
# scripts/package/mkdebian) makes linux-headers only for a config with
# modules, for building them: the distro config, and the guest config, which
# has module support for this (it builds no modules).
#
#   KCONFIG=guest   the guest config, in the object dir make kernel built
#                   ($BUILD_ROOT/obj-guest): bindeb-pkg reuses those objects
#                   (same CC string, same tree), so it costs the packaging,
#                   not a second build. Runs in CI.
#   KCONFIG=distro  Debian's own amd64 config + kernel-patches/config/distro.config
#                   (scripts/kernel-config-distro.sh), for real machines: a full
#                   distro build, thousands of modules; hours on 2 cores (see README).
#
# The package version says which patch series is in it:
#   <kernel version>-<build #N>+iou.g<commit>[.dirty.t<tree>]
# <commit> is the last commit of this repository that changed kernel-patches/
# (the series, BASE and the config fragments), <build #N> the kernel's own
# build number (uname -v); when kernel-patches/ has uncommitted changes,
# ".dirty.t<tree>" adds the git tree hash of its working-tree content, so
# two builds of different series never carry the same version.
#
# Takes the same lock as scripts/kernel.sh ($BUILD_ROOT/kernel-$KCONFIG.lock),
# so it never builds in an object dir another build is using.
set -euo pipefail
. "$(dirname "$0")/common.sh"

OUT=$BUILD_ROOT/kernel-deb/$KCONFIG
# the series' hash as scripts/kernel.sh computes it (what $KSRC/.iou-series holds)
series_hash=$(cd "$REPO/kernel-patches" && hash_files series $(grep -v '^#' series))
case "$KCONFIG" in
guest) "$REPO/scripts/kernel.sh" ;;   # the tree, the series and the objects, as make kernel
distro)
	# only the patched tree is needed: make kernel (guest) applies the series
	# when the tree has none or another one
	[ "$(cat "$KSRC/.iou-series" 2>/dev/null)" = "$series_hash" ] || KCONFIG=guest "$REPO/scripts/kernel.sh"
	;;
*) die "make kernel-deb: KCONFIG=guest or distro, not '$KCONFIG'" ;;
esac

# the series' identity in the package version
git_r() { git -C "$REPO" "$@"; }
commit=$(git_r log -1 --format=%h --abbrev=12 -- kernel-patches 2>/dev/null || true)
[ -n "$commit" ] || die "kernel-patches/ has no commit in $REPO: the package version names the series by its commit"
series_id=g$commit
if [ -n "$(git_r status --porcelain --untracked-files=all -- kernel-patches)" ]; then
	idx=$(mktemp)
	trap 'rm -f "$idx"' EXIT
	GIT_INDEX_FILE=$idx git_r read-tree --empty
	GIT_INDEX_FILE=$idx git_r add -A -- kernel-patches
	tree=$(GIT_INDEX_FILE=$idx git_r write-tree --prefix=kernel-patches/)
	rm -f "$idx"
	series_id+=.dirty.t${tree:0:12}
fi

exec 9>"$BUILD_ROOT/kernel-$KCONFIG.lock"
flock 9
if [ "$KCONFIG" = distro ]; then
	"$REPO/scripts/kernel-config-distro.sh" "$KOBJ"
fi
[ "$(cat "$KSRC/.iou-series" 2>/dev/null)" = "$series_hash" ] ||
	die "$KSRC does not hold kernel-patches/series as it is now (another build applied a different one?): run make kernel-deb again"
kver=$(make -s -C "$KSRC" O="$KOBJ" kernelversion)
# the build number the kernel links with (uname -v's #N); bindeb-pkg, given
# KDEB_PKGVERSION, does not bump it, so objects built by make kernel are reused
build=$(cat "$KOBJ/.version" 2>/dev/null || echo 1)
pkgversion=$kver-$build+iou.$series_id
t0=$(date +%s)
log "bindeb-pkg ($KCONFIG) in $KOBJ, version $pkgversion"
# bindeb-pkg leaves the packages in the object dir's parent: a scratch dir
# keeps them apart from the build root's own files
rm -f "$BUILD_ROOT"/linux-*.deb "$BUILD_ROOT"/linux-upstream_* "$BUILD_ROOT"/linux-iou-offload_*
# the packages' Maintainer: the project's, as in debian/control (not user@host)
maint=$(sed -n 's/^Maintainer: *//p' "$REPO/debian/control" | head -1)
[[ $maint =~ ^(.+)\ \<(.+)\>$ ]] || die "debian/control: no 'Maintainer: NAME <EMAIL>' line"
DEBFULLNAME=${BASH_REMATCH[1]} DEBEMAIL=${BASH_REMATCH[2]} \
	nice -n 10 "${KMAKE[@]}" bindeb-pkg KDEB_SOURCENAME=linux-iou-offload KDEB_PKGVERSION="$pkgversion" \
	> "$BUILD_ROOT/kernel-deb-$KCONFIG.log" 2>&1 || {
	tail -40 "$BUILD_ROOT/kernel-deb-$KCONFIG.log" >&2
	die "bindeb-pkg failed (log: $BUILD_ROOT/kernel-deb-$KCONFIG.log)"
}
rm -rf "$OUT"
mkdir -p "$OUT"
mv "$BUILD_ROOT"/linux-*.deb "$OUT/"
rm -f "$BUILD_ROOT"/linux-iou-offload_* "$BUILD_ROOT"/linux-upstream_*
release=$(cat "$KOBJ/include/config/kernel.release")
[ -f "$OUT/linux-image-${release}_${pkgversion}_amd64.deb" ] ||
	die "bindeb-pkg made no linux-image-${release}_${pkgversion}_amd64.deb (log: $BUILD_ROOT/kernel-deb-$KCONFIG.log)"
# the guest package carries the very kernel the guest suites boot
if [ "$KCONFIG" = guest ]; then
	dpkg-deb --fsys-tarfile "$OUT/linux-image-${release}_${pkgversion}_amd64.deb" |
		tar -xO "./boot/vmlinuz-$release" | cmp -s - "$KOBJ/arch/x86/boot/bzImage" ||
		die "the packaged vmlinuz-$release differs from $KOBJ/arch/x86/boot/bzImage (relinked by bindeb-pkg?)"
fi
if grep -q '^CONFIG_MODULES=y' "$KOBJ/.config"; then
	[ -f "$OUT/linux-headers-${release}_${pkgversion}_amd64.deb" ] ||
		die "CONFIG_MODULES=y but bindeb-pkg made no linux-headers-${release} package"
else
	log "no linux-headers package: the $KCONFIG config has no CONFIG_MODULES (nothing to build modules for)"
fi
echo "$pkgversion" > "$OUT/VERSION"
log "kernel packages ($KCONFIG, series $series_id) in $(( $(date +%s) - t0 )) s:"
ls -l "$OUT"/*.deb | awk '{ print "   " $NF " (" $5 " bytes)" }'
