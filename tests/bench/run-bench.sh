#!/usr/bin/env bash
# Host side of `make bench` and `make bench-kfunc`.
#
#   run-bench.sh kfunc   build and pack the bench suites, boot the guest with
#                        bench-kfunc only, once per TCG CPU model in
#                        KFUNC_CPUS (default "max max,-erms": with and
#                        without ERMS, i.e. rep movsb), print each table
#   run-bench.sh all     the same with suite bench first (one boot: memcpy,
#                        dd, cp, fio, iou-offloadd engines over brd with
#                        O_DIRECT, or tmpfs, or a virtio disk: BENCH_MEDIA),
#                        then the host baseline on the host's own kernel
#                        (tmpfs, and durability.sh on the host's disk; no
#                        BPF), then one table, JSON and plot
#   run-bench.sh scale   suite bench-scale alone (scale.sh): 1, 4, 16 GiB
#                        with 1, 2, 4 pipelines per engine on a virtio scratch
#                        disk; prints its table
#   run-bench.sh profile build perf from the kernel tree (build-perf.sh), then
#                        suite bench-profile alone (profile.sh): perf record
#                        of the uring and bpf engines on stripe and copy
#   run-bench.sh ublk    suite bench-ublk alone (bench-ublk.sh): fio on ublk
#                        linear, stripe, mirror with the bpf and uring engines
#                        against dm-linear, dm-stripe, dm-raid1 over the same
#                        ram disks, then its table, JSON and plot
#                        (report_ublk.py); perf built first for its profile
#
# Results: $BUILD_ROOT/bench/<what>-<time>/ (bench/last-<what> points at it):
# table.md, results.json (every raw figure), plot.png, plus guest/, host/,
# kfunc/ as they came and vm.log (the run's TAP).
#
# Variables: BENCH_MEDIA (brd), BENCH_MB (guest data per run: 1024 with brd,
# else 128), BENCH_RUNS (5), BENCH_CPU (TCG's -cpu model for the guest
# of make bench and make bench-profile, default max,-erms: without ERMS the
# kernel clears and copies pages with rep stosq and loops, which TCG runs at
# a steady speed; max is the variant with rep movsb/stosb), HOST_BENCH_MB
# (256), HOST_BENCH_TRANSFORMS (copy), BENCH_BS, BENCH_QD, BENCH_ENGINE_QD,
# BENCH_MEDIA, BENCH_TOOLS, BENCH_ENGINES, BENCH_TRANSFORMS (see bench.sh;
# handed to the guest on its command line), KFUNC_MIN_TIME (seconds per kfunc
# measurement; 0.2 for all, the kfunc suite's own 0.4 for kfunc),
# HOST_BASELINE=0 to leave the host out; and run-vm.sh's
# (ACCEL, VM_MEM default 4G here, VM_SMP, TIMEOUT default 3600 here, VM_SCRATCH_MB).
# scale: SCALE_SIZES, SCALE_PIPELINES, SCALE_MULTI_UPTO, SCALE_ENGINES, SCALE_BS, SCALE_QD,
# SCALE_RUNS (scale.sh); profile: PROFILE_MB, PROFILE_BS, PROFILE_QD,
# PROFILE_ENGINES, PROFILE_TRANSFORMS, PROFILE_FREQ, PROFILE_STARTUP_RUNS, PROFILE_MEDIA, PROFILE_CALLGRAPH (profile.sh); ublk: UBLK_MB,
# UBLK_RUNS, UBLK_RUNTIME, UBLK_TARGETS, UBLK_ENGINES, UBLK_PATHS, UBLK_WORKLOADS,
# UBLK_QUEUES, UBLK_INTEGRITY, UBLK_PROFILE (bench-ublk.sh).
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"

what=${1:-all}
case "$what" in kfunc|all|scale|profile|ublk) ;; *) die "usage: $0 kfunc|all|scale|profile|ublk" ;; esac
BENCH_MEDIA=${BENCH_MEDIA:-brd}
if [[ " $BENCH_MEDIA " == *" brd "* ]]; then
	BENCH_MB=${BENCH_MB:-1024}
fi
BENCH_MB=${BENCH_MB:-128}
BENCH_RUNS=${BENCH_RUNS:-5}
BENCH_CPU=${BENCH_CPU:-max,-erms}
HOST_BENCH_MB=${HOST_BENCH_MB:-256}
[ -f "$KOBJ/arch/x86/boot/bzImage" ] || die "no guest kernel at $KOBJ/arch/x86/boot/bzImage (make kernel)"
[ -f "$KOBJ/vmlinux.h" ] || die "no $KOBJ/vmlinux.h (make kernel)"

"$REPO/scripts/deps.sh"
if [ "$what" = profile ] || { [ "$what" = ublk ] && [ "${UBLK_PROFILE:-}" != none ]; }; then
	"$REPO/tests/bench/build-perf.sh"
fi
make -s -C "$REPO/tests/bench" BUILD_ROOT="$BUILD_ROOT" DESTDIR="$BUILD_ROOT/payload" install
"$REPO/tests/vm/build-image.sh"

out=$BUILD_ROOT/bench/$what-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
ln -sfn "$(basename "$out")" "$BUILD_ROOT/bench/last-$what"

# the guest's knobs travel on its kernel command line (iou.bench_x=a,b)
append="${VM_APPEND:-}"
# make bench runs the kfunc suite at 0.2 s per calibrated measurement (24
# of them), make bench-kfunc at the suite's own 0.4
[ "$what" = all ] && KFUNC_MIN_TIME=${KFUNC_MIN_TIME:-0.2}
[ -n "${KFUNC_MIN_TIME:-}" ] && append+=" iou.kfunc_min_time=$KFUNC_MIN_TIME"
if [ "$what" = all ]; then
	# the default matrix runs ~5 min under TCG, the full one over 40
	export TIMEOUT=${TIMEOUT:-3600}
	# brd keeps what is written in guest RAM: the source and up to four
	# destinations of BENCH_MB (copy, mirror and dd/cp/fio write ram1 and
	# ram2 whole, stripe a quarter of ram1..4), the destripe's destination
	# (ram5, whole), plus the page cache of cp and of the checks:
	# 5 x BENCH_MB + 2 GiB, at least 4G
	mem_mb=4096
	[[ " $BENCH_MEDIA " == *" brd "* ]] && [ $((5 * BENCH_MB + 2048)) -gt $mem_mb ] && mem_mb=$((5 * BENCH_MB + 2048))
	export VM_MEM=${VM_MEM:-${mem_mb}M}
	export VM_CPU=$BENCH_CPU
	# a source, 4 destinations and the destripe's destination of BENCH_MB
	# each, as partitions and ram disks
	export VM_SCRATCH_MB=${VM_SCRATCH_MB:-$((6 * BENCH_MB + 8))}
	append+=" brd.rd_nr=6 brd.rd_size=$((BENCH_MB * 1024))"
	append+=" iou.bench_mb=$BENCH_MB iou.bench_runs=$BENCH_RUNS iou.suite_timeout=$((TIMEOUT - 120))"
	append+=" iou.bench_media=$(tr ' ' , <<<"$BENCH_MEDIA")"
	for k in BS QD ENGINE_QD TOOLS ENGINES TRANSFORMS MEMCPY_MB MOVSB; do
		v=$(eval echo "\${BENCH_$k:-}")
		[ -n "$v" ] && append+=" iou.bench_$(tr A-Z a-z <<<"$k")=$(tr ' ' , <<<"$v")"
	done
	mode=bench
elif [ "$what" = scale ]; then
	# two partitions of the largest size on a sparse scratch disk (scale.sh)
	max_mb=0
	for v in ${SCALE_SIZES:-1G 4G 16G}; do
		case $v in *G) m=$((${v%G} << 10)) ;; *M) m=${v%M} ;; *) die "SCALE_SIZES: $v: give sizes in M or G" ;; esac
		[ "$m" -gt "$max_mb" ] && max_mb=$m
	done
	export VM_SCRATCH_MB=${VM_SCRATCH_MB:-$((2 * max_mb + 8))}
	export TIMEOUT=${TIMEOUT:-5400}
	export GUEST_TESTS=bench-scale
	append+=" iou.suite_timeout=$((TIMEOUT - 120))"
	for k in SIZES PIPELINES MULTI_UPTO ENGINES BS QD RUNS; do
		v=$(eval echo "\${SCALE_$k:-}")
		[ -n "$v" ] && append+=" iou.scale_$(tr A-Z a-z <<<"$k")=$(tr ' ' , <<<"$v")"
	done
	mode=test
elif [ "$what" = profile ]; then
	export TIMEOUT=${TIMEOUT:-1800}
	# a source, four destinations and the destripe's destination of
	# PROFILE_MB (profile.sh), each written whole on brd, beside tmpfs's
	# source: 7 x PROFILE_MB + 1 GiB, at least 3G
	mem_mb=3072
	[ "${PROFILE_MEDIA:-tmpfs}" = brd ] && [ $((7 * ${PROFILE_MB:-256} + 1024)) -gt $mem_mb ] &&
		mem_mb=$((7 * ${PROFILE_MB:-256} + 1024))
	export VM_MEM=${VM_MEM:-${mem_mb}M}
	export VM_CPU=$BENCH_CPU
	export GUEST_TESTS=bench-profile
	[ "${PROFILE_MEDIA:-tmpfs}" = brd ] && append+=" brd.rd_nr=6 brd.rd_size=$((${PROFILE_MB:-256} * 1024))"
	for k in MB BS QD ENGINES TRANSFORMS FREQ STARTUP_RUNS MEDIA CALLGRAPH; do
		v=$(eval echo "\${PROFILE_$k:-}")
		[ -n "$v" ] && append+=" iou.profile_$(tr A-Z a-z <<<"$k")=$(tr ' ' , <<<"$v")"
	done
	mode=test
elif [ "$what" = ublk ]; then
	# four ram disks of UBLK_MB: the members of every target, dm's and ublk's
	UBLK_MB=${UBLK_MB:-256}
	export TIMEOUT=${TIMEOUT:-3600}
	export VM_MEM=${VM_MEM:-$((4 * UBLK_MB + 2048))M}
	export GUEST_TESTS=bench-ublk
	append+=" brd.rd_nr=4 brd.rd_size=$((UBLK_MB * 1024)) iou.suite_timeout=$((TIMEOUT - 120))"
	for k in MB RUNS RUNTIME TARGETS ENGINES PATHS WORKLOADS QUEUES INTEGRITY PROFILE; do
		v=$(eval echo "\${UBLK_$k:-}")
		[ -n "$v" ] && append+=" iou.ublk_$(tr A-Z a-z <<<"$k")=$(tr ' ' , <<<"$v")"
	done
	mode=test
else
	export GUEST_TESTS=bench-kfunc
	mode=test
fi
export VM_APPEND=${append# }

if [ "$what" = kfunc ]; then
	# one boot per CPU model: without ERMS neither glibc nor the kernel
	# copies with rep movsb, which TCG runs far slower than plain loops
	rc=0
	for cpu in ${KFUNC_CPUS:-max max,-erms}; do
		t=$out/kfunc-cpu-${cpu//,/}
		mkdir -p "$t"
		log "bench kfunc: guest run with -cpu $cpu (results in $t)"
		r=0
		VM_CPU=$cpu "$REPO/tests/vm/run-vm.sh" test 2>&1 | tee "$t/vm.log" || r=$?
		run=$(grep -oE 'run dir [^ ]+' "$t/vm.log" | tail -1 | cut -d' ' -f3)
		d=${run:+$run/results/artifacts/bench-kfunc}
		[ -n "$d" ] && [ -d "$d" ] && cp -a "$d/." "$t/"
		if [ "$r" -ne 0 ] || [ ! -s "$t/table.md" ]; then
			echo "no kfunc table came back with -cpu $cpu (see $t/vm.log)"
			rc=1
		fi
	done
	for cpu in ${KFUNC_CPUS:-max max,-erms}; do
		t=$out/kfunc-cpu-${cpu//,/}
		echo
		echo "## -cpu $cpu"
		echo
		cat "$t/table.md" 2>/dev/null || echo "(none)"
	done
	echo
	echo "results: $out"
	exit $rc
fi

log "bench $what: guest run$([ "$what" = all ] && echo " with -cpu $BENCH_CPU, $BENCH_MEDIA, $BENCH_MB MiB per run, VM_MEM $VM_MEM") (results in $out)"
rc=0
"$REPO/tests/vm/run-vm.sh" "$mode" 2>&1 | tee "$out/vm.log" || rc=$?
run=$(grep -oE 'run dir [^ ]+' "$out/vm.log" | tail -1 | cut -d' ' -f3)
accel=$(grep -oE '^# accelerator [a-z]+' "$out/vm.log" | tail -1 | cut -d' ' -f3)
if [ -z "$run" ] || [ ! -d "$run/results/artifacts" ]; then
	die "the guest brought no results back (see $out/vm.log)"
fi
for s in bench bench-kfunc bench-scale bench-profile bench-ublk; do
	d=$run/results/artifacts/$s
	[ -d "$d" ] || continue
	case $s in bench) t=$out/guest ;; bench-kfunc) t=$out/kfunc ;; *) t=$out/${s#bench-} ;; esac
	mkdir -p "$t"
	cp -a "$d/." "$t/"
done

if [ "$what" = ublk ]; then
	echo
	python3 "$REPO/tests/bench/report_ublk.py" --raw "$out/ublk/raw.jsonl" \
		--profile "$out/ublk/profile.txt" --out "$out" || rc=1
	echo
	echo "results: $out (table.md, results.json, plot.png; accelerator ${accel:-?}; guest tail: $(grep -E '^[0-9]+ passed' "$out/vm.log" | tail -1))"
	exit $rc
fi

if [ "$what" = scale ] || [ "$what" = profile ]; then
	f=$out/$what/table.md
	[ "$what" = profile ] && f=$out/$what/summary.txt
	echo
	if [ -s "$f" ]; then
		cat "$f"
	else
		echo "no $what results came back (see $out/vm.log)"
		rc=1
	fi
	echo
	echo "results: $out (accelerator ${accel:-?}; guest tail: $(grep -E '^[0-9]+ passed' "$out/vm.log" | tail -1))"
	exit $rc
fi

if [ "${HOST_BASELINE:-1}" != 0 ]; then
	log "bench: host baseline on the host's own kernel ($(uname -r)): tmpfs, $HOST_BENCH_MB MiB per run, no BPF"
	BENCHTOOL=$BUILD_ROOT/bench-build/benchtool BENCH_OUT=$out/host BENCH_MB=$HOST_BENCH_MB \
		BENCH_TRANSFORMS=${HOST_BENCH_TRANSFORMS:-copy} BENCH_ENGINES=uring \
		bash "$REPO/tests/bench/bench.sh" host > "$out/host.tap" 2>&1 || rc=1
	grep -E '^(not ok|ok) ' "$out/host.tap" | grep -v '^ok ' | sed 's/^/host: /' || true
fi

echo
python3 "$REPO/tests/bench/report.py" merge --guest "$out/guest" --host "$out/host" \
	--kfunc "$out/kfunc" --cpu "$BENCH_CPU" --out "$out" || rc=1
echo
echo "results: $out (table.md, results.json, plot.png; guest accelerator ${accel:-?})"
exit $rc
