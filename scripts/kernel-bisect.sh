#!/usr/bin/env bash
# make kernel-bisect: every prefix 1..k of kernel-patches/series must build.
# Works in its own worktree ($BUILD_ROOT/linux-bisect) and object dir, so
# the main tree and its objects are left alone and builds may overlap.
# Each prefix is applied through a scratch index and checked out (only
# changed files are touched); io_uring/ is built, and the whole vmlinux
# when the patch touches headers or Kconfig, where fallout lands elsewhere.
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ -f "$KOBJ/.config" ] || die "run make kernel first (needs $KOBJ/.config)"
wt=$BUILD_ROOT/linux-bisect
bobj=$BUILD_ROOT/obj-bisect
git_k() { git -C "$KSRC" "$@"; }
git_w() { git -C "$wt" -c user.name=iou-offload -c user.email=build@iou-offload "$@"; }

[ -d "$wt" ] || git_k worktree add -q --detach "$wt" base
mkdir -p "$bobj"
bmake=(make -s -C "$wt" O="$bobj" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION= -j"$(nproc)")
mapfile -t patches < <(grep -v '^#' "$REPO/kernel-patches/series" | sed '/^$/d')
idx=$BUILD_ROOT/bisect.index
GIT_INDEX_FILE=$idx git_w read-tree base
fail=0
for k in "${!patches[@]}"; do
	n=$((k + 1))
	p=${patches[$k]}
	GIT_INDEX_FILE=$idx git_w apply --cached "$REPO/kernel-patches/$p" || die "$p does not apply"
	commit=$(git_w commit-tree "$(GIT_INDEX_FILE=$idx git_w write-tree)" -p base -m "bisect $n")
	git_w checkout -q -f --detach "$commit"
	cp "$KOBJ/.config" "$bobj/.config"
	"${bmake[@]}" olddefconfig >/dev/null
	target=io_uring/
	grep -qE '^\+\+\+ b/(include/|init/Kconfig)' "$REPO/kernel-patches/$p" && target=vmlinux
	if "${bmake[@]}" "$target" >"$bobj/build-$n.log" 2>&1; then
		echo "ok $n - $p builds ($target)"
	else
		echo "not ok $n - $p does not build ($target): $bobj/build-$n.log"
		tail -n 20 "$bobj/build-$n.log"
		fail=$((fail + 1))
	fi
done
rm -f "$idx"
echo "$((${#patches[@]} - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
