#!/usr/bin/env bash
# The host build stands alone: `make -C daemon BPF=0` reads nothing from the
# build root (no patched uapi header, libbpf or vmlinux.h a kernel build left
# there), and `make try` installs only what that build needs. Part of make
# check; seconds (make -n: nothing is built).
set -uo pipefail
. "$(dirname "$0")/common.sh"
. "$REPO/tests/lib/tap.sh"

# a build root that holds every file BPF=1 would use, so leaking into it shows
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/headers-guest/include/linux" "$fake/obj-guest"
touch "$fake/headers-guest/include/linux/io_uring.h" "$fake/obj-guest/vmlinux.h"
cmds=$(make -s -n -B -C "$REPO/daemon" BPF=0 BUILD_ROOT="$fake" 2>&1)
check "make -C daemon BPF=0 compiles nothing against the build root" \
	eval '! grep -qF "$fake" <<< "$cmds"'
check "make -C daemon BPF=0 compiles the daemon" grep -q 'main\.c' <<< "$cmds"

# make try: the compiler, pkg-config and the libraries the host build links
try=$(sed -n 's/^try_pkgs=(\(.*\))$/\1/p' "$REPO/scripts/deps.sh")
check "make try installs seven packages, not the kernel and guest toolchain" \
	eval '[ "$(wc -w <<< "$try")" -eq 7 ] && ! grep -qE "linux-source|qemu|mkosi|clang|lintian" <<< "$try"'
# captured first: under pipefail, `make | grep -q` fails when grep exits
# before make has written its last line (SIGPIPE), as on a busy machine
try_cmds=$(make -s -n -C "$REPO" try 2>/dev/null)
check "make try runs deps.sh try, not the whole make deps" \
	grep -q "deps.sh try" <<< "$try_cmds"
plan
summary
tap_status
