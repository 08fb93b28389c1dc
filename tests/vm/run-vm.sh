#!/usr/bin/env bash
# Boot the patched kernel with the guest image in QEMU and bring the results home.
#
#   run-vm.sh test    run the guest suites (all non-manual ones, or GUEST_TESTS)
#   run-vm.sh demo    run the `demo` suite (the daemon's default pipeline)
#   run-vm.sh bench   run the `bench` suite
#
# The guest (tests/vm/guest/run-suites) writes a tar archive with its TAP log
# onto a second virtio disk, echoes test lines on the serial console and
# reports its status through isa-debug-exit. The host prints every TAP line,
# then a closing `N passed, N failed, N skipped` line, and exits non-zero on a
# failed test, a guest panic, a kernel BUG/WARNING on the console, missing
# results or a timeout (printing the console's tail).
#
# Variables: ACCEL=auto|tcg|kvm (auto: KVM only if a probe boot works),
# GUEST_TESTS='a b' or a,b (test mode), TIMEOUT=seconds (default 1800 for test, 900 demo, bench
# 1800), VM_MEM (2G), VM_SMP (2), KERNEL (bzImage), VM_IMAGE (root.raw),
# VM_APPEND (extra kernel command line, e.g. iou.trace or
# iou.suite_timeout=N), VM_TSC_KHZ, VM_SCRATCH_MB (default 0: no scratch disk;
# N: an N MiB zeroed virtio disk, serial iou-scratch, for the suites),
# VM_SCRATCH_IMG (an existing file as that disk, kept after the run),
# VM_SCRATCH_BPS (cap that disk's reads plus writes at N bytes/s),
# VM_RESET=sysrq|kill (the boot is to end in a hard reset; see reset-test.sh),
# VM_CPU (TCG's -cpu model, default max; e.g. max,-erms).
# Each run's console log, TAP log and artifacts stay in $BUILD_ROOT/runs/.
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
trap 'echo "error: ${BASH_SOURCE[0]}:$LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

mode=${1:-test}
ACCEL=${ACCEL:-auto}
KERNEL=${KERNEL:-$KOBJ/arch/x86/boot/bzImage}
IMAGE=${VM_IMAGE:-$BUILD_ROOT/image/root.raw}
VM_MEM=${VM_MEM:-2G}
VM_SMP=${VM_SMP:-2}
VM_APPEND=${VM_APPEND:-}
VM_SCRATCH_MB=${VM_SCRATCH_MB:-0}

case "$mode" in
# all the suites took 882 s under TCG on 2 cores (2026-12-06): a bound for a
# hung guest, with room; each suite has its own bound inside the guest
test)  tests=${GUEST_TESTS:-}; TIMEOUT=${TIMEOUT:-1800} ;;
demo)  tests=demo; TIMEOUT=${TIMEOUT:-900} ;;
bench) tests=bench,bench-kfunc; TIMEOUT=${TIMEOUT:-1800} ;;
*) die "usage: $0 test|demo|bench" ;;
esac
tests=$(echo "$tests" | tr ' ,' '\n\n' | sed '/^$/d' | paste -sd, -)

[ -f "$KERNEL" ] || die "no kernel at $KERNEL (run make kernel)"
[ -f "$IMAGE" ] || die "no guest image at $IMAGE (run make image)"

# One guest at a time on this machine: TCG guests share its cores, and
# figures or timeouts from two guests at once mean little.
mkdir -p "$BUILD_ROOT/runs"
exec 8>"$BUILD_ROOT/runs/vm.lock"
if ! flock -n 8; then
	log "waiting for another guest run to finish ($BUILD_ROOT/runs/vm.lock)"
	flock 8
fi

# demo and bench are suites other components install: the payload and the
# harness hold some, the packages the image installs (iou-offload-tests,
# make deb) the rest; say so plainly if none of them has it
suite_runs() {
	local d
	printf '%s\n' "$BUILD_ROOT"/payload/usr/lib/iou-offload/tests/*/run \
		"$BUILD_ROOT"/image/harness/usr/lib/iou-offload/tests/*/run
	for d in "$BUILD_ROOT"/deb/*.deb; do
		[ -f "$d" ] && dpkg-deb --fsys-tarfile "$d" | tar -t | sed -n 's|^\./|/|; s|^/\?\(usr/lib/iou-offload/tests/[^/]*/run\)$|\1|p'
	done
}
suite_installed() {
	local run base
	while read -r run; do
		base=$(basename "$(dirname "$run")")
		[[ $base =~ ^[0-9]+-(.*)$ ]] && base=${BASH_REMATCH[1]}
		[ "$base" = "$1" ] && return 0
	done < <(suite_runs)
	return 1
}
if [ "$mode" != test ] && ! suite_installed "$mode"; then
	case "$mode" in
	demo) echo "iou-offload demo: not there yet. The daemon's demo suite (usr/lib/iou-offload/tests/NN-demo/run" \
		"in $BUILD_ROOT/payload or the packages in $BUILD_ROOT/deb) has not been built, so there is no pipeline to run." >&2 ;;
	bench) echo "iou-offload bench: not there yet. No bench suite (usr/lib/iou-offload/tests/NN-bench/run)" \
		"in $BUILD_ROOT/payload." >&2 ;;
	esac
	exit 2
fi

run=$BUILD_ROOT/runs/$mode-$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$run"
ln -sfn "$(basename "$run")" "$BUILD_ROOT/runs/last-$mode"
console=$run/console.log
results=$run/results.raw
: > "$console"

# accelerator: KVM is used only when a probe boot (the guest kernel with a
# busybox root that prints a marker) succeeds within a few seconds
kvm_probe() {
	local dir=$BUILD_ROOT/kvm-probe out
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	if [ ! -f "$dir/probe.raw" ]; then
		rm -rf "$dir" && mkdir -p "$dir/root/bin" "$dir/root/dev" "$dir/root/proc"
		cp /bin/busybox "$dir/root/bin/busybox"
		mkfs.ext4 -q -F -d "$dir/root" "$dir/probe.raw" 8M >/dev/null 2>&1 || return 1
	fi
	out=$(timeout -k 2 "${KVM_PROBE_TIMEOUT:-10}" qemu-system-x86_64 -nodefaults -no-user-config \
		-display none -no-reboot -accel kvm -cpu host -m 256M -smp 1 \
		-kernel "$KERNEL" -serial stdio \
		-drive "file=$dir/probe.raw,format=raw,if=virtio,snapshot=on" \
		-append "console=ttyS0 root=/dev/vda ro panic=-1 init=/bin/busybox -- sh -c \"echo IOU-KVM-PROBE-OK; /bin/busybox reboot -f\"" \
		</dev/null 2>&1) || true
	grep -q IOU-KVM-PROBE-OK <<<"$out"
}
case "$ACCEL" in
auto)
	if kvm_probe; then accel=kvm; else accel=tcg; fi ;;
kvm|tcg) accel=$ACCEL ;;
*) die "ACCEL must be auto, tcg or kvm" ;;
esac
if [ "$accel" = kvm ]; then
	accel_args=(-accel kvm -cpu host)
else
	accel_args=(-accel tcg,thread=multi -cpu "${VM_CPU:-max}")
fi

# results disk: zeroed each run, so nothing stale can be read back
rm -f "$results"
truncate -s 256M "$results"
scratch_args=()
scratch_file=""
if [ -n "${VM_SCRATCH_IMG:-}" ]; then
	# a scratch disk that outlives this boot (tests/vm/reset-test.sh)
	[ -f "$VM_SCRATCH_IMG" ] || die "no scratch image at $VM_SCRATCH_IMG"
	scratch_file=$VM_SCRATCH_IMG
elif [ "$VM_SCRATCH_MB" -gt 0 ]; then
	truncate -s "${VM_SCRATCH_MB}M" "$run/scratch.raw"
	scratch_file=$run/scratch.raw
fi
if [ -n "$scratch_file" ]; then
	throttle=""
	# a disk as slow as a real one, so a copy takes a known while
	[ "${VM_SCRATCH_BPS:-0}" -gt 0 ] && throttle=",throttling.bps-total=$VM_SCRATCH_BPS"
	scratch_args=(-drive "file=$scratch_file,format=raw,if=none,id=scratch,cache=unsafe$throttle"
		-device virtio-blk-pci,drive=scratch,serial=iou-scratch)
fi

# Under TCG the guest's TSC runs at the host's TSC rate, but the guest (no
# ACPI, so no HPET or PM timer) often fails to calibrate it and falls back to
# 10 ms jiffies: hand it the host's rate (VM_TSC_KHZ=0 to let it calibrate)
if [ -z "${VM_TSC_KHZ:-}" ]; then
	VM_TSC_KHZ=0
	if grep -qw constant_tsc /proc/cpuinfo; then
		VM_TSC_KHZ=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
	fi
fi
cmdline="console=ttyS0 root=/dev/vda rw rootfstype=ext4 init=/lib/systemd/systemd"
cmdline+=" systemd.unit=iou-test.target systemd.show_status=error panic=-1 mitigations=off"
[ "$accel" = tcg ] && [ "${VM_TSC_KHZ:-0}" -gt 0 ] && cmdline+=" tsc=reliable tsc_early_khz=$VM_TSC_KHZ"
[ -n "$tests" ] && cmdline+=" iou.tests=$tests"
# VM_RESET=sysrq|kill: this boot ends in a hard reset of the guest, by the
# guest's sysrq or by SIGKILL to QEMU once the console says IOU-RESET-NOW
VM_RESET=${VM_RESET:-}
case "$VM_RESET" in
''|sysrq|kill) ;;
*) die "VM_RESET must be sysrq or kill" ;;
esac
[ -n "$VM_RESET" ] && cmdline+=" iou.reset=$VM_RESET"
[ -n "$VM_APPEND" ] && cmdline+=" $VM_APPEND"
# the guest kernel has no ACPI: it finds CPUs in the MP table, where QEMU
# lists one per socket (cores of one socket stay invisible)
cmdline+=" iou.smp=$VM_SMP"

log "vm $mode: accelerator $accel$([ "$ACCEL" = auto ] && [ "$accel" = tcg ] && echo " (KVM probe failed)"), ${tests:+suites $tests, }timeout ${TIMEOUT} s"
log "console: $console"
t0=$(date +%s.%N)
# the root image is opened snapshot=on: the guest's writes go to a throwaway
# overlay (in TMPDIR=$run), so every run starts from the same image
TMPDIR=$run timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -nodefaults -no-user-config \
	-display none -no-reboot "${accel_args[@]}" -m "$VM_MEM" -smp "$VM_SMP,sockets=$VM_SMP,cores=1,threads=1" \
	-kernel "$KERNEL" -append "$cmdline" \
	-serial "file:$console" \
	-drive "file=$IMAGE,format=raw,if=none,id=root,snapshot=on,cache=unsafe" \
	-device virtio-blk-pci,drive=root,serial=iou-root \
	-drive "file=$results,format=raw,if=none,id=results" \
	-device virtio-blk-pci,drive=results,serial=iou-results \
	"${scratch_args[@]}" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	</dev/null > "$run/qemu.log" 2>&1 &
qpid=$!
# live: the guest's TAP lines as it prints them on the console
tail -s 0.5 --pid=$qpid -n +1 -F "$console" 2>/dev/null | sed -un 's/\r$//; s/^.*IOU-TAP: //p' \
	| tee "$run/live.tap" &
tpid=$!
if [ "$VM_RESET" = kill ]; then
	# pull the plug: SIGKILL to QEMU (the child of timeout), no flush
	( while kill -0 $qpid 2>/dev/null; do
		if grep -a 'IOU-RESET-NOW' "$console" | grep -v 'IOU-TAP' >/dev/null; then
			pkill -KILL -P $qpid qemu-system && echo killed > "$run/reset-kill"
			break
		fi
		sleep 0.05
	done ) &
fi
rc=0
wait $qpid || rc=$?
wait $tpid 2>/dev/null || true
elapsed=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')

# what came back
mkdir -p "$run/results"
tar -C "$run/results" -xf "$results" 2>/dev/null || true
rm -f "$results" "$run/scratch.raw"
# keep the last 20 runs of each mode
ls -1dt "$BUILD_ROOT/runs/$mode"-* 2>/dev/null | tail -n +21 | xargs -r rm -rf
tap=$run/results/tap.log
problems=()
if [ -n "$VM_RESET" ]; then
	# the reset is the expected end: no results disk, the console's TAP counts
	case "$VM_RESET:$rc" in
	sysrq:0) rc=reset ;;
	kill:137) [ -f "$run/reset-kill" ] && rc=reset ;;
	esac
fi
case $rc in
reset) guest=reset ;;
1) guest=pass ;;
3) guest=fail ;;
124|137) guest=timeout; problems+=("guest finished within ${TIMEOUT} s (killed after ${elapsed} s)") ;;
0) guest=none; problems+=("guest reported a status through isa-debug-exit (QEMU exited 0: guest reboot, poweroff or panic)") ;;
*) guest=error; problems+=("QEMU ran (exit status $rc: $(tail -1 "$run/qemu.log"))") ;;
esac
if [ ! -s "$tap" ]; then
	[ "$guest" = reset ] || problems+=("guest wrote its TAP log to the results disk")
	# fall back on what the console carried
	[ -s "$run/live.tap" ] && cp "$run/live.tap" "$run/console.tap" && tap=$run/console.tap
fi
while IFS= read -r e; do
	problems+=("guest runner: ${e#*IOU-ERROR: }")
done < <(grep -a 'IOU-ERROR: ' "$console" | grep -av 'IOU-TAP: ' | tr -d '\r')
panic=$(grep -a -m1 -E 'Kernel panic|end Kernel panic' "$console" || true)
[ -z "$panic" ] || problems+=("kernel did not panic ($panic)")
kbad=$(grep -av 'IOU-' "$console" | grep -a -m5 -E 'BUG:|WARNING:|Oops|kmemleak: [0-9]+ new suspected memory leak|UBSAN:' || true)
[ -z "$kbad" ] || problems+=("console has no kernel BUG/WARNING/Oops ($(head -1 <<<"$kbad" | tr -d '\r'))")

# The results disk's TAP log is authoritative; the console stream shown live
# can be garbled by kernel messages, so reprint the log if the two differ.
passed=0 failed=0 skipped=0
if [ -f "$tap" ]; then
	if ! cmp -s "$tap" "$run/live.tap"; then
		echo "# ---- the console stream differed from the results disk; its TAP log ($tap):"
		cat "$tap"
	fi
	while IFS= read -r line; do
		case "$line" in
		"ok "*)
			if grep -qiE '#[[:space:]]*skip' <<<"$line"; then skipped=$((skipped + 1)); else passed=$((passed + 1)); fi ;;
		"not ok "*)
			if grep -qiE '#[[:space:]]*todo' <<<"$line"; then skipped=$((skipped + 1)); else failed=$((failed + 1)); fi ;;
		esac
	done < "$tap"
fi
for p in "${problems[@]}"; do
	echo "not ok - host: $p"
	failed=$((failed + 1))
done
[ $((passed + failed + skipped)) -gt 0 ] || { echo "not ok - host: at least one test ran"; failed=1; }
[ "$guest" = fail ] && [ $failed -eq 0 ] && { echo "not ok - host: guest reported failure, but its TAP shows none"; failed=1; }

first=$(grep -m1 -oE 'boot-to-first-test: [0-9.]+ s' "$tap" 2>/dev/null | grep -oE '[0-9.]+' || echo "?")
echo "# accelerator $accel$([ "$accel" = tcg ] && echo " (-cpu ${VM_CPU:-max})"), boot to first test ${first} s guest uptime, whole VM run ${elapsed} s; run dir $run"
if [ $failed -ne 0 ]; then
	# the tail says most when the guest itself went wrong; keep it short otherwise
	lines=15
	[ ${#problems[@]} -eq 0 ] || lines=40
	echo "# ---- console tail ($console)"
	grep -av 'IOU-TAP: ' "$console" | tail -n $lines | tr -d '\r' | sed 's/^/# /'
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ] || exit 1
