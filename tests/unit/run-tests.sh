#!/usr/bin/env bash
# Run cmocka test binaries, show their output, and sum their summaries.
# A skipped test is counted as skipped, never as passed.
set -uo pipefail
dir=$1; shift
pass=0 fail=0 skip=0 bad=()
for t in "$@"; do
	out=$(cd "$dir" && "./$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
	pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skip=$((skip + ${s:-0}))
	if [ $rc -ne 0 ] && [ -z "$f" ]; then
		# crashed before cmocka could count: one failure for the binary
		fail=$((fail + 1)); bad+=("$t (exit $rc)")
	elif [ -n "$f" ] && [ "$f" != 0 ]; then
		bad+=("$t")
	fi
done
echo "unit tests: $pass passed, $fail failed, $skip skipped"
[ ${#bad[@]} -eq 0 ] || { echo "failing: ${bad[*]}"; exit 1; }
