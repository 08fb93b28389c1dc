#!/usr/bin/env bash
# make liburing-test: liburing's own test suite (current upstream, built
# statically) run in the guest on this tree's kernel and on the same kernel
# built without the series (the `base` tag with the same .config), then the
# tests that fail only with the series are printed; there must be none.
# Every test runs with the series; on base only those that failed with the
# series run (LIBURING_BASE=all: every test), and when none failed, base is
# neither built nor booted. Under TCG every test took 16 min on 2026-12-07
# (liburing 27255f4c, 256 tests, 120 s each at most: 6 socket tests the
# guest cannot run, it has no CONFIG_INET, ran out their time), and base
# the 47 that failed 12 min, with a base kernel to build.
#
# liburing is cloned under $BUILD_ROOT/liburing (never into this
# repository) and built there; its test binaries reach the guest on an ext4
# scratch disk (VM_SCRATCH_IMG), not in the shared image. The guest suite
# `liburing` (manual) mounts it and runs every *.t with a time limit.
#
# Variables: LIBURING_GIT (clone source; default the local mirror
# /work/.mirror/axboe+liburing/repo when present, else GitHub),
# LIBURING_REF (default HEAD), LIBURING_TESTS ('a.t b.t': a subset),
# LIBURING_TEST_TIMEOUT (seconds per test, default 180), TIMEOUT (seconds
# per guest run, default 10800), LIBURING_BASE (failed: default, or all).
# Long under TCG: not part of make test.
set -euo pipefail
. "$(dirname "$0")/common.sh"

mirror=/work/.mirror/axboe+liburing/repo
if [ -z "${LIBURING_GIT:-}" ]; then
	LIBURING_GIT=https://github.com/axboe/liburing.git
	[ -d "$mirror" ] && LIBURING_GIT=$mirror
fi
LIBURING_REF=${LIBURING_REF:-HEAD}
per_test=${LIBURING_TEST_TIMEOUT:-180}
guest_timeout=${TIMEOUT:-10800}
src=$BUILD_ROOT/liburing
stage=$BUILD_ROOT/liburing-stage
out=$BUILD_ROOT/liburing-runs
base_wt=$BUILD_ROOT/linux-base
base_obj=$BUILD_ROOT/obj-base-$KCONFIG

# 1. liburing at LIBURING_REF, built statically
[ -d "$src/.git" ] || git clone -q --no-checkout "$LIBURING_GIT" "$src"
git -C "$src" fetch -q "$LIBURING_GIT" "$LIBURING_REF"
git -C "$src" checkout -q -f --detach FETCH_HEAD
log "liburing $(git -C "$src" log -1 --format='%h %cs %s')"
(
	cd "$src"
	# configure rewrites config-host.h, which rebuilds everything: once per checkout
	if [ "$(cat .iou-configured 2>/dev/null)" != "$(git rev-parse HEAD)" ]; then
		./configure --cc=gcc --cxx=g++ >/dev/null
		git rev-parse HEAD > .iou-configured
	fi
	nice -n 10 make -s -j"$(nproc)" -C src
	nice -n 10 make -s -j"$(nproc)" -C test LDFLAGS=-static
) > "$BUILD_ROOT/liburing-build.log" 2>&1 || {
	tail -n 30 "$BUILD_ROOT/liburing-build.log"
	die "liburing does not build: $BUILD_ROOT/liburing-build.log"
}

# 2. the guest suite's small runner goes into the payload (manual suite)
suite=$BUILD_ROOT/payload/usr/lib/iou-offload/tests/$(suite_dir liburing)
rm -rf "$BUILD_ROOT"/payload/usr/lib/iou-offload/tests/[0-9][0-9]-liburing
mkdir -p "$suite"
: > "$suite/manual"
cat > "$suite/run" <<'RUN'
#!/bin/sh
# liburing's tests (make liburing-test), from the ext4 scratch disk: TAP,
# one line per test binary; exit status 77 is a skip, as liburing's runner.
dev=/dev/disk/by-id/virtio-iou-scratch
mnt=/run/liburing
if [ ! -b "$dev" ]; then
	echo "1..0 # SKIP no liburing scratch disk: run make liburing-test"
	exit 0
fi
mkdir -p "$mnt" && mount "$dev" "$mnt" || { echo "Bail out! mount $dev"; exit 1; }
cd "$mnt/test" || exit 1
read -r limit < ../timeout
tests=$(cat ../tests)
set -- $tests
echo "1..$#"
i=0
for t in "$@"; do
	i=$((i + 1))
	timeout -k 10 "$limit" "./$t" > "$t.log" 2>&1
	rc=$?
	case $rc in
	0) echo "ok $i - $t" ;;
	77) echo "ok $i - $t # SKIP" ;;
	*) echo "not ok $i - $t (exit $rc)"; tail -n 5 "$t.log" | sed 's/^/# /' ;;
	esac
done
cd / && umount "$mnt"
RUN
chmod 0755 "$suite/run"

# the binaries and what they read, on an ext4 image made from a staging dir
rm -rf "$stage"
mkdir -p "$stage/test"
(cd "$src/test" && find . -maxdepth 1 -type f \( -name '*.t' -o ! -name '*.[cho]' \) \
	! -name Makefile -exec cp -p {} "$stage/test/" \;)
if [ -n "${LIBURING_TESTS:-}" ]; then
	echo "$LIBURING_TESTS" > "$stage/tests"
else
	(cd "$stage/test" && ls -- *.t) | tr '\n' ' ' > "$stage/tests"
fi
echo "$per_test" > "$stage/timeout"
log "$(wc -w < "$stage/tests") liburing tests staged"

# 3. the image (payload changed), then the guest run with the series
"$REPO/tests/vm/build-image.sh"
mkdir -p "$out"
rm -f "$out/series.tap" "$out/base.tap"
run_one() { # NAME KERNEL: the suite's TAP into $out/NAME.tap
	local name=$1 kernel=$2 img=$out/$1.ext4 rc=0
	rm -f "$img"
	mke2fs -q -t ext4 -F -d "$stage" "$img" 2G
	log "liburing on the $name kernel ($kernel): $(wc -w < "$stage/tests") tests"
	KERNEL=$kernel VM_SCRATCH_IMG=$img TIMEOUT=$guest_timeout GUEST_TESTS=liburing \
		VM_APPEND="iou.suite_timeout=$guest_timeout ${VM_APPEND:-}" \
		"$REPO/tests/vm/run-vm.sh" test > "$out/$name.tap" 2>&1 || rc=$?
	grep -E 'passed, [0-9]+ failed' "$out/$name.tap" | tail -n 1 || true
	return 0
}
# (no match is an empty list, not an error)
failed() { { grep -aoE '^not ok [0-9]+ - liburing: [^ ]+\.t' "$1" || true; } | awk '{ print $NF }' | sort -u; }
ran() { { grep -aoE '^(not )?ok [0-9]+ - liburing: [^ ]+\.t' "$1" || true; } | awk '{ print $NF }' | sort -u; }
staged=$(tr ' ' '\n' < "$stage/tests" | sed '/^$/d' | sort -u)
run_one series "$KOBJ/arch/x86/boot/bzImage"
n_series=$(ran "$out/series.tap" | wc -l)
[ "$n_series" -gt 0 ] || die "no liburing results with the series: see $out/series.tap"
missing=$(comm -23 <(echo "$staged") <(ran "$out/series.tap"))
series_failed=$(failed "$out/series.tap")
for t in $missing; do echo "not ok - $t did not run with the series"; done

# 4. the same kernel without the series (tag base, this tree's .config), for
#    the tests that failed with the series (or all of them)
only=""
if [ -n "$series_failed" ] || [ "${LIBURING_BASE:-failed}" = all ]; then
	[ -f "$KOBJ/.config" ] || die "run make kernel first (needs $KOBJ/.config)"
	[ -d "$base_wt" ] || git -C "$KSRC" worktree add -q --detach "$base_wt" base
	git -C "$base_wt" checkout -q -f --detach base
	mkdir -p "$base_obj"
	cp "$KOBJ/.config" "$base_obj/.config"
	bmake=(nice -n 10 make -s -C "$base_wt" O="$base_obj" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION= -j"$(nproc)")
	"${bmake[@]}" olddefconfig >/dev/null
	log "building the kernel without the series in $base_obj"
	"${bmake[@]}" bzImage > "$base_obj/build.log" 2>&1 || {
		tail -n 30 "$base_obj/build.log"
		die "the base kernel does not build: $base_obj/build.log"
	}
	[ "${LIBURING_BASE:-failed}" = all ] || echo $series_failed > "$stage/tests"
	run_one base "$base_obj/arch/x86/boot/bzImage"
	base_ran=$(ran "$out/base.tap")
	[ -n "$base_ran" ] || die "no liburing results without the series: see $out/base.tap"
	# failed with the series, and on base either passed or did not run
	only=$(comm -23 <(echo "$series_failed" | sed '/^$/d') <(failed "$out/base.tap"))
	for t in $(comm -23 <(echo "$series_failed" | sed '/^$/d') <(echo "$base_ran")); do
		echo "not ok - $t did not run without the series"
	done
	n_base=$(echo "$base_ran" | wc -l)
else
	n_base=0
fi

# 5. the tests that fail only with the series
echo "# liburing: $n_series tests ran with the series, $n_base without;" \
	"$(echo "$series_failed" | sed '/^$/d' | wc -l) failed with the series," \
	"$([ -f "$out/base.tap" ] && failed "$out/base.tap" | wc -l || echo 0) without"
for t in $only; do echo "not ok - $t fails only with the series"; done
[ -z "$only$missing" ] || exit 1
echo "ok - no liburing test fails only with the series"
