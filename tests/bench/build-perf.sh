#!/usr/bin/env bash
# The guest's perf: tools/perf of the patched 6.12 tree (it matches the
# kernel; Debian's linux-perf is built for its own kernel), into
# $BUILD_ROOT/tools/perf/perf. Only what a cpu-clock profile needs: no
# python/perl, no libtraceevent, no DWARF unwinding; it links against libc,
# libm, zlib and libelf only, which the guest image has (libbpf1 pulls in the
# last two). 3.5-5 min on 2 cores with a kernel build or a guest beside it,
# then skipped until the tree is extracted again. `make kernel` first.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

out=$TOOLS/perf
[ -f "$KSRC/tools/perf/Makefile.perf" ] || die "no kernel tree at $KSRC (make kernel)"
if [ -x "$out/perf" ] && [ "$out/perf" -nt "$KSRC/.iou-base" ]; then
	exit 0
fi
log "building perf from $KSRC/tools/perf into $out"
mkdir -p "$out"
t0=$(date +%s)
make -s -C "$KSRC/tools/perf" O="$out" CC="ccache gcc" -j"$(nproc)" WERROR=0 \
	NO_LIBPYTHON=1 NO_LIBPERL=1 NO_LIBTRACEEVENT=1 NO_SLANG=1 NO_GTK2=1 NO_LIBNUMA=1 \
	NO_LIBBABELTRACE=1 NO_CAPSTONE=1 NO_LIBPFM4=1 NO_LIBUNWIND=1 NO_LIBCRYPTO=1 \
	NO_JEVENTS=1 NO_LIBDEBUGINFOD=1 NO_LIBLLVM=1 NO_DEMANGLE=1 NO_BPF_SKEL=1 NO_SDT=1 \
	NO_AUXTRACE=1 NO_LIBZSTD=1 NO_LZMA=1 NO_LIBCAP=1 perf > "$out/build.log" 2>&1 ||
	{ tail -20 "$out/build.log" >&2; die "building perf failed (see $out/build.log)"; }
log "perf built in $(( $(date +%s) - t0 )) s: $("$out/perf" version)"
