#!/usr/bin/env bash
# make kernel: extract the pinned Debian linux-source-6.12 into the build root,
# apply kernel-patches/series, configure from the committed fragments, build
# bzImage with ccache, install uapi headers, build the tree's libbpf/bpftool
# and dump vmlinux.h. Each step is skipped when its inputs did not change.
set -euo pipefail
. "$(dirname "$0")/common.sh"

# one kernel build at a time per build root (make test and a developer may overlap)
mkdir -p "$BUILD_ROOT"
exec 9>"$BUILD_ROOT/kernel-$KCONFIG.lock"
flock 9

base=$(cat "$REPO/kernel-patches/BASE")
have=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
[ "$have" = "$base" ] || die "kernel-patches/BASE pins linux-source-6.12 $base, installed is '${have:-none}' (run make deps, or update BASE)"

git_k() { git -C "$KSRC" -c user.name=iou-offload -c user.email=build@iou-offload "$@"; }

# 1. pristine tree as a git repo: tag 'base' is Debian's source, untouched
if [ "$(cat "$KSRC/.iou-base" 2>/dev/null)" != "$base" ]; then
	log "extracting linux-source-6.12 $base into $KSRC"
	rm -rf "$KSRC" "$KSRC.tmp"
	mkdir -p "$KSRC.tmp"
	tar -C "$KSRC.tmp" -xf /usr/src/linux-source-6.12.tar.xz
	mv "$KSRC.tmp"/linux-source-6.12 "$KSRC"
	rmdir "$KSRC.tmp"
	# Debian's .gitignore ignores everything: force-add, and keep it out of clean
	git_k init -q
	git_k add -f -A
	git_k commit -q -m "Debian linux-source-6.12 $base"
	git_k tag base
	echo "$base" > "$KSRC/.iou-base"
fi

# 2. the series. The target tree is built in a scratch index (git apply
#    --cached) and then checked out, so only files whose content changes get
#    a new mtime: an unchanged patch costs no rebuild of what it touches.
series_hash=$(cd "$REPO/kernel-patches" && hash_files series $(grep -v '^#' series))
if [ "$(cat "$KSRC/.iou-series" 2>/dev/null)" != "$series_hash" ]; then
	log "applying kernel-patches/series"
	if [ -n "$(git_k status --porcelain --untracked-files=no)" ]; then
		die "$KSRC has uncommitted changes: commit them (make kernel-export) first"
	fi
	idx=$BUILD_ROOT/series.index
	rm -f "$idx"
	GIT_INDEX_FILE=$idx git_k read-tree base
	while read -r p; do
		case "$p" in ''|'#'*) continue ;; esac
		if ! GIT_INDEX_FILE=$idx git_k apply --cached "$REPO/kernel-patches/$p" 2>"$BUILD_ROOT/am.log"; then
			cat "$BUILD_ROOT/am.log" >&2
			die "patch kernel-patches/$p does not apply"
		fi
	done < "$REPO/kernel-patches/series"
	tree=$(GIT_INDEX_FILE=$idx git_k write-tree)
	rm -f "$idx"
	# a developer's dev branch with exactly this content stays checked out
	if [ "$(git_k rev-parse -q --verify 'dev^{tree}' 2>/dev/null)" = "$tree" ]; then
		git_k checkout -q -f dev
	else
		commit=$(git_k commit-tree "$tree" -p base -m "kernel-patches/series $series_hash")
		git_k checkout -q -f -B series "$commit"
	fi
	echo "$series_hash" > "$KSRC/.iou-series"
fi

# 3. configuration: tinyconfig + kvm_guest.config + our fragment(s)
frags=("$KSRC/kernel/configs/kvm_guest.config" "$REPO/kernel-patches/config/guest.config")
[ "$KCONFIG" = guest ] || frags+=("$REPO/kernel-patches/config/$KCONFIG.config")
for f in "${frags[@]}"; do [ -f "$f" ] || die "missing config fragment $f"; done
cfg_hash=$(hash_files "${frags[@]}" "$KSRC/.iou-series")
mkdir -p "$KOBJ"
if [ "$(cat "$KOBJ/.iou-config" 2>/dev/null)" != "$cfg_hash" ]; then
	log "configuring $KOBJ ($KCONFIG)"
	"${KMAKE[@]}" tinyconfig >/dev/null
	(cd "$KSRC" && KCONFIG_CONFIG="$KOBJ/.config" scripts/kconfig/merge_config.sh -m -O "$KOBJ" "$KOBJ/.config" "${frags[@]}" >/dev/null)
	"${KMAKE[@]}" olddefconfig >/dev/null
	# every requested line must have taken effect (tinyconfig drops dependencies)
	bad=0
	for f in "${frags[@]:1}"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) want=$line ;;
			"# CONFIG_"*" is not set") want=$line ;;
			*) continue ;;
			esac
			sym=${want#\# }; sym=${sym%%[= ]*}
			got=$(grep -E "^(# )?$sym[= ]" "$KOBJ/.config" || echo "# $sym is not set")
			if [ "$got" != "$want" ]; then
				echo "config: $(basename "$f"): wanted '$want', got '$got'" >&2
				bad=1
			fi
		done < "$f"
	done
	[ $bad -eq 0 ] || die "kernel config fragment did not take effect (see above)"
	echo "$cfg_hash" > "$KOBJ/.iou-config"
fi

# 4. userspace BPF tools from the same tree: libbpf 1.5 (static), bpftool.
#    They need only the source, so they build beside the kernel, niced: they
#    take the core the kernel's serial link, BTF and kallsyms steps leave idle.
tools_pid=""
if [ ! -x "$TOOLS/bpftool/bpftool" ] || [ "$KSRC/.iou-base" -nt "$TOOLS/bpftool/bpftool" ]; then
	log "building libbpf and bpftool from the tree (beside the kernel)"
	mkdir -p "$TOOLS/libbpf" "$TOOLS/bpftool"
	rm -f "$TOOLS/bpftool/bpftool"
	(
		nice -n 10 make -s -C "$KSRC/tools/lib/bpf" OUTPUT="$TOOLS/libbpf/" CC="ccache gcc" \
			DESTDIR="$TOOLS/libbpf/root" prefix=/usr -j"$(nproc)" install_headers install >/dev/null &&
		nice -n 10 make -s -C "$KSRC/tools/bpf/bpftool" OUTPUT="$TOOLS/bpftool/" CC="ccache gcc" \
			-j"$(nproc)" >/dev/null
	) > "$TOOLS/build.log" 2>&1 &
	tools_pid=$!
fi

# 5. the kernel (make itself is the no-op check)
log "building bzImage ($KCONFIG)"
"${KMAKE[@]}" bzImage
"${KMAKE[@]}" headers_install INSTALL_HDR_PATH="$KHDR" >/dev/null
if [ -n "$tools_pid" ] && ! wait "$tools_pid"; then
	tail -30 "$TOOLS/build.log" >&2
	die "building libbpf/bpftool failed (full log: $TOOLS/build.log)"
fi
if [ ! -s "$KOBJ/vmlinux.h" ] || [ "$KOBJ/vmlinux" -nt "$KOBJ/vmlinux.h" ]; then
	"$TOOLS/bpftool/bpftool" btf dump file "$KOBJ/vmlinux" format c > "$KOBJ/vmlinux.h.tmp"
	mv "$KOBJ/vmlinux.h.tmp" "$KOBJ/vmlinux.h"
fi
log "kernel ready: $KOBJ/arch/x86/boot/bzImage ($(cat "$KOBJ/include/config/kernel.release"))"
