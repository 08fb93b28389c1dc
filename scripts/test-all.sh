#!/usr/bin/env bash
# make test: the host tier (make check), the guest suites (make vm-test) and
# the guest resets (make vm-reset), in that order, each to the end even when
# an earlier one failed. Each prints its own summary; the last line sums
# them up, and the exit status is non-zero if any tier failed.
set -uo pipefail
. "$(dirname "$0")/common.sh"
cd "$REPO"

mkdir -p "$BUILD_ROOT/runs"
passed=0 failed=0 skipped=0 rc=0
tiers=()
# The patched kernel's headers first, so that the host tier compares the
# daemon's compat ABI values with them (without, that test can only skip);
# IOU_REQUIRE_UAPI turns a missing header into a failure, not a skip.
if ! make -s kernel; then
	echo "not ok - make kernel (the host tier runs without the patched headers)"
	failed=$((failed + 1)) rc=1
fi
export IOU_REQUIRE_UAPI=1
for t in check vm-test vm-reset; do
	out=$BUILD_ROOT/runs/make-$t.out
	make -s "$t" 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	line=$(summary_of "$out")
	if [ -z "$line" ]; then
		echo "not ok - make $t printed its summary (exit status $st)"
		line="0 passed, 1 failed, 0 skipped"
	elif [ "$st" -ne 0 ] && [ "$(cut -d' ' -f3 <<< "$line")" -eq 0 ]; then
		echo "not ok - make $t exited 0 (got $st) with no failed test"
		line="${line%% *} passed, 1 failed, $(cut -d' ' -f5 <<< "$line") skipped"
	fi
	read -r p _ f _ s _ <<< "$line"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$st" -eq 0 ] || rc=1
	tiers+=("make $t: $line")
done
echo "# ---- make test"
for t in "${tiers[@]}"; do echo "# $t"; done
echo "$passed passed, $failed failed, $skipped skipped"
exit $rc
