#!/usr/bin/env bash
# make kernel-bisect: every prefix 1..k of kernel-patches/series must build.
# Applies each prefix (scratch index, then checkout: only changed files are
# touched) and builds io_uring/ in its own object dir with the guest config;
# patches that touch the uapi header or init/Kconfig get a full vmlinux
# build (Kconfig and header fallout shows up outside io_uring/). Restores
# the full series at the end.
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ -f "$KOBJ/.config" ] || die "run make kernel first (needs $KOBJ/.config)"
exec 9>"$BUILD_ROOT/kernel-$KCONFIG.lock"
flock 9

git_k() { git -C "$KSRC" -c user.name=iou-offload -c user.email=build@iou-offload "$@"; }
[ -z "$(git_k status --porcelain --untracked-files=no)" ] || die "$KSRC has uncommitted changes"

bobj=$BUILD_ROOT/obj-bisect
mkdir -p "$bobj"
mapfile -t patches < <(grep -v '^#' "$REPO/kernel-patches/series" | sed '/^$/d')
idx=$BUILD_ROOT/bisect.index
GIT_INDEX_FILE=$idx git_k read-tree base
fail=0
for k in "${!patches[@]}"; do
	p=${patches[$k]}
	GIT_INDEX_FILE=$idx git_k apply --cached "$REPO/kernel-patches/$p" || die "$p does not apply"
	commit=$(git_k commit-tree "$(GIT_INDEX_FILE=$idx git_k write-tree)" -p base -m "bisect $((k + 1))")
	git_k checkout -q -f -B bisect "$commit"
	cp "$KOBJ/.config" "$bobj/.config"
	make -s -C "$KSRC" O="$bobj" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION= olddefconfig >/dev/null
	target=io_uring/
	grep -qE '^\+\+\+ b/(include/uapi/|init/Kconfig|include/linux/)' "$REPO/kernel-patches/$p" && target=vmlinux
	if make -s -C "$KSRC" O="$bobj" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION= \
		-j"$(nproc)" "$target" >"$bobj/build-$((k + 1)).log" 2>&1; then
		echo "ok $((k + 1)) - $p builds ($target)"
	else
		echo "not ok $((k + 1)) - $p does not build ($target): $bobj/build-$((k + 1)).log"
		tail -n 20 "$bobj/build-$((k + 1)).log"
		fail=$((fail + 1))
	fi
done
rm -f "$idx"
git_k checkout -q -f series 2>/dev/null || true
echo "$((${#patches[@]} - fail)) passed, $fail failed"
exit $fail
