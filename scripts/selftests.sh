#!/usr/bin/env bash
# make selftests: build tools/testing/selftests/io_uring of the patched tree
# (BPF objects with clang against the kernel's vmlinux.h, libbpf from the
# same tree, linked statically) and install it as a guest test suite.
set -euo pipefail
. "$(dirname "$0")/common.sh"

st=$KSRC/tools/testing/selftests/io_uring
[ -f "$st/Makefile" ] || die "no $st: is kernel-patches/series applied (make kernel)?"
out=$BUILD_ROOT/selftests-$KCONFIG
tests=$BUILD_ROOT/payload/usr/lib/iou-offload/tests
suite=$tests/$(suite_dir kselftest-io_uring)

make -s -C "$st" OUTPUT="$out" CC="ccache gcc" \
	VMLINUX_H="$KOBJ/vmlinux.h" BPFTOOL="$TOOLS/bpftool/bpftool" \
	LIBBPF_DIR="$TOOLS/libbpf/root/usr" KHDR_INCLUDES="-isystem $KHDR/include"

rm -rf "$tests"/[0-9][0-9]-kselftest-io_uring
mkdir -p "$suite"
install -m 0755 "$out/runner" "$suite/runner"
cat > "$suite/run.tmp" <<'RUN'
#!/bin/sh
# Kernel selftests for IORING_OP_BPF, uring_bpf_memcpy() and loop_step: TAP on stdout.
cd "$(dirname "$0")" && exec ./runner "$@"
RUN
chmod 0755 "$suite/run.tmp"
mv "$suite/run.tmp" "$suite/run"
log "selftests installed in $suite"
