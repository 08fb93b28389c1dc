#!/usr/bin/env bash
# make check: the host tier. The cmocka unit tests (and the fuzz run), then
# `make try` (the shipped examples run as written with the uring engine), then
# the guest suites' bookkeeping (tests/vm/check-suites.sh: suite numbers,
# shared helpers, every suite parses), then packaging (debian/control agrees
# with make deps; the host build reads nothing from the build root;
# KCONFIG=distro's config step); one summary line over all. Loads
# nothing into the host kernel.
set -uo pipefail
. "$(dirname "$0")/common.sh"

passed=0 failed=0 skipped=0 rc=0
for step in "make -s -C $REPO/tests/unit check" "$REPO/scripts/try.sh" "$REPO/tests/vm/check-suites.sh" \
	"$REPO/scripts/check-deb-deps.sh" "$REPO/scripts/check-build-isolation.sh" \
	"$REPO/scripts/kernel-config-distro.sh"; do
	out=$(mktemp)
	$step 2>&1 | tee "$out"
	st=${PIPESTATUS[0]}
	line=$(summary_of "$out")
	rm -f "$out"
	[ -n "$line" ] || line="0 passed, 1 failed, 0 skipped"
	read -r p _ f _ s _ <<< "$line"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$st" -eq 0 ] || rc=1
done
echo "$passed passed, $failed failed, $skipped skipped"
exit $rc
