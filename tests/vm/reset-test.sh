#!/usr/bin/env bash
# make vm-reset: hard resets of the whole guest in the middle of a copy.
#
# Each run boots the guest twice on one scratch disk that outlives both
# boots (guest suite reset, tests/integration/faults/reset.sh):
#   boot 1 starts iou-offloadd under systemd and resets the guest mid-copy,
#          alternately by sysrq-b (guest kernel, no sync) and by SIGKILL to
#          QEMU (the plug pulled from outside);
#   boot 2 replays the ext4 journal, restarts the daemon and checks that
#          every destination ends byte-identical, resumes no earlier than the
#          checkpoint boot 1 saw durable, and how much was re-copied.
#
# RESET_RUNS (default 2) runs; prints each boot's TAP, then one closing
# `N passed, N failed, N skipped` over all boots. Exits non-zero on any failure.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

RUNS=${RESET_RUNS:-2}
# boot 1's disk moves RESET_BPS bytes/s (default 24 MiB/s), so the copy
# takes several seconds wherever the reset is aimed: with 2 guest CPUs an
# unthrottled copy went from 69% to finished between two status writes
BPS=${RESET_BPS:-$((24 << 20))}
img=$BUILD_ROOT/runs/reset-scratch.raw
passed=0 failed=0 skipped=0
summary=()

tally() {	# the closing line of one run-vm.sh output
	local line
	line=$(summary_of "$1")
	if [ -z "$line" ]; then
		failed=$((failed + 1))
		echo "not ok - reset: run-vm.sh printed its summary ($1)"
		return
	fi
	read -r p _ f _ s _ <<< "$line"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

for i in $(seq "$RUNS"); do
	how=sysrq
	[ $((i % 2)) -eq 0 ] && how=kill
	rm -f "$img"
	truncate -s 1G "$img"
	log "reset run $i of $RUNS: boot 1, reset by $how mid-copy"
	out1=$BUILD_ROOT/runs/reset-$i-boot1.out
	VM_SCRATCH_IMG=$img VM_SCRATCH_BPS=$BPS VM_RESET=$how GUEST_TESTS=reset TIMEOUT=${TIMEOUT:-900} \
		"$REPO/tests/vm/run-vm.sh" test 2>&1 | tee "$out1" || true
	tally "$out1"
	# the marker is on that boot's console (runs/last-test may be another's)
	rundir=$(grep -aoE 'run dir /[^ ]+' "$out1" | tail -1 | cut -d' ' -f3)
	done_at=$(grep -aoE 'IOU-RESET-DONE [a-z]:[0-9]+,[a-z]:[0-9]+' "${rundir:-/dev/null}/console.log" 2>/dev/null |
		tail -1 | cut -d' ' -f2)
	if [ -z "$done_at" ]; then
		echo "not ok - reset run $i: boot 1 reached the reset point (IOU-RESET-DONE on its console)"
		failed=$((failed + 1))
		continue
	fi
	log "reset run $i of $RUNS: boot 2, restart after the reset (progress before it: $done_at)"
	out2=$BUILD_ROOT/runs/reset-$i-boot2.out
	VM_SCRATCH_IMG=$img VM_APPEND="${VM_APPEND:-} iou.reset_done=$done_at" GUEST_TESTS=reset \
		TIMEOUT=${TIMEOUT:-900} "$REPO/tests/vm/run-vm.sh" test 2>&1 | tee "$out2" || true
	tally "$out2"
	summary+=("run $i ($how): $(grep -aoE 'on disk: [0-9]+ bytes re-copied' "$out2" | awk '{ print $3 }' | paste -sd/ -) bytes re-copied (a/b)")
done
rm -f "$img"
for s in "${summary[@]}"; do echo "# $s"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
