#!/usr/bin/env bash
# KCONFIG=distro's configuration step: Debian's own amd64 config
# (linux-config-6.12, the same version as linux-source-6.12) plus
# kernel-patches/config/distro.config, olddefconfig in the patched tree, and
# every line of the fragment verified. Writes OBJDIR/.config (argument 1):
# make kernel-deb KCONFIG=distro passes $BUILD_ROOT/obj-distro and builds on
# it, under that build's lock. make check runs it with no argument, in
# $BUILD_ROOT/distro-config-check, so that it never rewrites the .config of
# a distro build going on beside it (hours). Seconds; skipped, and said so,
# before make kernel has extracted and patched the tree.
set -euo pipefail
. "$(dirname "$0")/common.sh"
KOBJ=${1:-$BUILD_ROOT/distro-config-check}
frag=$REPO/kernel-patches/config/distro.config
base=$(cat "$REPO/kernel-patches/BASE")
debcfg=/usr/src/linux-config-6.12/config.amd64_none_amd64.xz

if [ ! -f "$KSRC/.iou-series" ]; then
	echo "ok 1 - distro kernel config # SKIP no patched tree in $KSRC yet (make kernel)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
have=$(dpkg-query -W -f='${Version}' linux-config-6.12 2>/dev/null || true)
[ "$have" = "$base" ] || die "linux-config-6.12 is '${have:-not installed}', the source is $base (make deps)"

mkdir -p "$KOBJ"
xzcat "$debcfg" > "$KOBJ/.config"
(cd "$KSRC" && KCONFIG_CONFIG="$KOBJ/.config" scripts/kconfig/merge_config.sh -m -O "$KOBJ" "$KOBJ/.config" "$frag" >/dev/null)
make -s -C "$KSRC" O="$KOBJ" HOSTCC="ccache gcc" olddefconfig >/dev/null
bad=0
while IFS= read -r want; do
	case "$want" in CONFIG_*=*|"# CONFIG_"*" is not set") ;; *) continue ;; esac
	sym=${want#\# }; sym=${sym%%[= ]*}
	got=$(grep -E "^(# )?$sym[= ]" "$KOBJ/.config" || echo "# $sym is not set")
	if [ "$got" != "$want" ]; then
		echo "# distro.config: wanted '$want', got '$got'"
		bad=1
	fi
done < "$frag"
if [ $bad -eq 0 ]; then
	echo "ok 1 - distro kernel config: Debian's amd64 config + distro.config, every option in effect"
	echo "1 passed, 0 failed, 0 skipped"
else
	echo "not ok 1 - distro kernel config: options did not take effect (above)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
