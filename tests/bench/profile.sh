#!/bin/bash
# Where the CPU goes (issue 8: "where a target is missed, profile it"): guest
# suite bench-profile (manual; `make bench-profile` selects it).
#
# For each transform (stripe, copy; also stripe-multi, whose four units per
# member and block the engine gathers, stripe_unit = block / 16 and
# stripe_io = gather, and destripe-multi, the same layout read back from the
# four members into one destination of its own) and engine (uring, bpf,
# loop), alternating:
# iou-offloadd --once moves PROFILE_MB on PROFILE_MEDIA (tmpfs, or brd: ram
# disks with O_DIRECT, which never punt to io-wq) while `perf record -a -e
# cpu-clock` samples both CPUs (the daemon's threads, its io-wq workers, and
# the kernel work done for them wherever it runs), inside `benchtool run
# --count` for the wall, CPU and io_uring_enter figures of the same run.
# perf is the 6.12 tree's own tools/perf (tests/bench/build-perf.sh), which
# matches this kernel; cpu-clock is a software event (TCG has no PMU).
#
# The transform `startup` is the fixed cost instead: PROFILE_STARTUP_RUNS
# one-block copies (brd with O_DIRECT when the guest has it, else tmpfs)
# under one perf record, with the daemon's own timing of its phases (the
# "ready in" and "finish in" lines at log_level info) and the system calls
# of each run. `startup-gather` is the same for a one-block stripe over 4
# tmpfs files whose units the engine gathers (stripe_unit = block / 16,
# stripe_io = gather): the bpf engine loads its IORING_OP_BPF object for
# it, and the loop engine both of its objects.
#
# Artifacts: per run perf.data's reports by command and by symbol
# (<tf>-<engine>-{comm,sym}.txt), and summary.txt: the top symbols of each
# run with idle left out, side by side.
#
# Knobs (environment, or iou.profile_x=a,b on the kernel command line):
# PROFILE_MB (256), PROFILE_BS (1M), PROFILE_QD (32), PROFILE_ENGINES
# ("uring bpf loop"), PROFILE_TRANSFORMS ("stripe copy"; add "startup"),
# PROFILE_FREQ (499), PROFILE_STARTUP_RUNS (10), PROFILE_MEDIA (tmpfs; brd
# needs /dev/ram0..5 of PROFILE_MB, which run-bench.sh boots with),
# PROFILE_CALLGRAPH (unset; 1: record call chains and print the callers of
# the symbols over 5 % of the samples of the commands that did the work).
set -u
here=$(cd "$(dirname "$0")" && pwd)
BT=${BENCHTOOL:-$here/benchtool}
. "$here/common.sh"
cmdline_knobs profile
PROFILE_MB=${PROFILE_MB:-256}
PROFILE_BS=${PROFILE_BS:-1M}
PROFILE_QD=${PROFILE_QD:-32}
PROFILE_ENGINES=${PROFILE_ENGINES:-uring bpf loop}
PROFILE_TRANSFORMS=${PROFILE_TRANSFORMS:-stripe copy}
PROFILE_FREQ=${PROFILE_FREQ:-499}
PROFILE_STARTUP_RUNS=${PROFILE_STARTUP_RUNS:-10}
PROFILE_MEDIA=${PROFILE_MEDIA:-tmpfs}
OUT=${IOU_ARTIFACTS:-/run/iou-profile-out}
WORK=/run/iou-profile
mkdir -p "$OUT" "$WORK/state" "$WORK/data"


PERF=$(command -v perf || echo "$here"/../[0-9][0-9]-bench-profile/perf)
[ -x "$PERF" ] || skip_all "no perf in the guest (tests/bench/build-perf.sh builds the kernel tree's tools/perf into the payload)"
daemon=$(command -v iou-offloadd) || skip_all "iou-offloadd is not installed in the guest"
[ -x "$BT" ] || skip_all "no benchtool (suite bench)"
# kernel and BPF program symbols for root's samples
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
[ -w /proc/sys/net/core/bpf_jit_kallsyms ] && echo 1 > /proc/sys/net/core/bpf_jit_kallsyms

mkdir -p "$WORK/tmpfs"
mount -t tmpfs -o size=$((8 * PROFILE_MB + 16))m iou-profile "$WORK/tmpfs" || skip_all "cannot mount tmpfs"
trap 'umount "$WORK/tmpfs" 2>/dev/null' EXIT
D=$WORK/tmpfs
"$BT" fill "$D/src" $((PROFILE_MB << 20)) || skip_all "filling the source failed"
# the medium of the stripe and copy runs
SRC=$D/src DSTS=() DIRECT=no
case $PROFILE_MEDIA in
tmpfs)	for i in 1 2 3 4; do DSTS+=("$D/dst$i"); done
	GDST=$D/gathered ;;
brd)	for i in 0 1 2 3 4 5; do
		# not $n: that is tap.sh's test count
		have=$(blockdev --getsize64 /dev/ram$i 2>/dev/null || echo 0)
		[ "$have" -ge $((PROFILE_MB << 20)) ] ||
			skip_all "/dev/ram$i has $have bytes, needs $((PROFILE_MB << 20)) (run-bench.sh boots with brd.rd_nr=6 brd.rd_size=PROFILE_MB in KiB)"
	done
	# every ram disk written once: no profiled run pays for brd's first
	# allocation of its pages (MemFree fell 234 MiB in the first run)
	for i in 0 1 2 3 4 5; do
		"$BT" fill /dev/ram$i $((PROFILE_MB << 20)) || skip_all "filling /dev/ram$i failed"
	done
	SRC=/dev/ram0 DSTS=(/dev/ram1 /dev/ram2 /dev/ram3 /dev/ram4) GDST=/dev/ram5 DIRECT=yes ;;
*)	skip_all "PROFILE_MEDIA: $PROFILE_MEDIA: give tmpfs or brd" ;;
esac
# the destripe's members: each its share of the stream, written once
MEMBERS=()
if [[ " $PROFILE_TRANSFORMS " == *" destripe-multi "* ]]; then
	for i in 0 1 2 3; do
		[ "$PROFILE_MEDIA" = tmpfs ] && MEMBERS+=("$D/member$i") || MEMBERS+=("${DSTS[$i]}")
		"$BT" fill "${MEMBERS[$i]}" $((PROFILE_MB << 18)) || skip_all "filling ${MEMBERS[$i]} failed"
	done
fi
accel=$("$BT" accel)
echo "# profile: accelerator $accel, kernel $(uname -r), $("$PERF" version), cpu-clock at $PROFILE_FREQ Hz on all CPUs"
echo "# $PROFILE_MB MiB on $PROFILE_MEDIA (direct = $DIRECT), block_size $PROFILE_BS, queue_depth $PROFILE_QD"

config() {	# FILE ENGINE TRANSFORM
	local i
	local -a srcs=("$SRC") dsts=("${DSTS[0]}")
	case "$3" in
	stripe*) dsts=("${DSTS[@]}") ;;
	destripe*) srcs=("${MEMBERS[@]}") dsts=("$GDST") ;;
	esac
	{
		daemon_section "$WORK/state" "$2" "$PROFILE_QD" "$PROFILE_BS"
		echo "checkpoint_interval = ${PROFILE_MB}M"
		echo "direct = $DIRECT"
		[[ $3 == *stripe* ]] && echo "stripe_unit = $(stripe_unit "$3" "$(size_bytes "$PROFILE_BS")")"
		echo "[pipeline prof]"
		transform_keys "$3"
		for i in "${srcs[@]}"; do echo "source = $i"; done
		echo "length = ${PROFILE_MB}M"
		for i in "${dsts[@]}"; do echo "destination = $i"; done
	} > "$1"
}

# top N lines of a perf report --stdio, without comments and blank lines
top() { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' | head -"$2"; }

# the perf reports of DATA for TAG: by command, and by symbol without idle
reports() {	# DATA TAG; sets comms, the commands that did the work
	# flat (-g none: a call-graph recording would print its chains in these)
	"$PERF" report -i "$1" --stdio --no-children -g none --sort comm --percent-limit 0.5 \
		> "$OUT/$2-comm.txt" 2>/dev/null
	# idle CPUs (swapper) out: what is left is the work of moving the data
	comms=$(top "$OUT/$2-comm.txt" 40 | awk '$1 ~ /%$/ && $2 != "swapper" { print $2 }' | paste -sd, -)
	"$PERF" report -i "$1" --stdio --no-children -g none --sort dso,sym --percent-limit 0.3 --percentage relative \
		${comms:+--comms "$comms"} > "$OUT/$2-sym.txt" 2>/dev/null
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# PROFILE_STARTUP_RUNS one-block copies (TF startup) or gathered stripes
# (startup-gather) with ENGINE: wall, CPU, system calls, the daemon's
# phases, and where the CPU went
startup() {	# ENGINE TF
	local e=$1 tf=$2 tag=$2-$1 dev src dst i line data=$WORK/data/$2-$1.data
	if [ "$tf" = startup-gather ]; then
		src=$D/src dst="$D/g0 $D/g1 $D/g2 $D/g3"
	elif [ -b /dev/ram0 ] || modprobe brd rd_nr=2 rd_size=$((64 << 10)) 2>/dev/null; then
		src=/dev/ram0 dst=/dev/ram1
	else
		src=$D/src dst=$D/startup-dst
	fi
	{
		daemon_section "$WORK/state" "$e" "$PROFILE_QD" "$PROFILE_BS"
		echo "[pipeline once]"
		if [ "$tf" = startup-gather ]; then
			transform_keys stripe-multi
			echo "stripe_unit = $(stripe_unit stripe-multi "$(size_bytes "$PROFILE_BS")")"
		else
			echo "transform = copy"
		fi
		echo "source = $src"
		for i in $dst; do echo "destination = $i"; done
		echo "length = $PROFILE_BS"
	} > "$WORK/$tag.conf"
	: > "$OUT/$tag.log"
	: > "$WORK/$tag.runs"
	# the runs under one perf record: enough samples for where the time goes
	cat > "$WORK/$tag.sh" <<-EOS
	for i in \$(seq $PROFILE_STARTUP_RUNS); do
		rm -rf "$WORK/state"/*
		"$BT" run --count --log "$OUT/$tag.log.\$i" -- "$daemon" --config="$WORK/$tag.conf" --once -l info \
			2>>"$OUT/$tag.log" >> "$WORK/$tag.runs"
	done
	EOS
	"$PERF" record -q -a -e cpu-clock -F "$PROFILE_FREQ" -o "$data" -- bash "$WORK/$tag.sh" 2>>"$OUT/$tag.log"
	cat "$OUT/$tag.log".* >> "$OUT/$tag.log" 2>/dev/null
	rm -f "$OUT/$tag.log".*
	if [ "$(wc -l < "$WORK/$tag.runs")" != "$PROFILE_STARTUP_RUNS" ] || grep -qv 'rc=0' "$WORK/$tag.runs"; then
		nok "$tf, engine $e: $PROFILE_STARTUP_RUNS one-block runs under perf record (see artifacts/bench-profile/$tag.log)"
		tail -5 "$OUT/$tag.log" | sed 's/^/#   /'
		return
	fi
	reports "$data" "$tag"
	local wall cpu sc ready fin
	wall=$(while read -r line; do kv wall "$line"; done < "$WORK/$tag.runs" | median)
	cpu=$(while read -r line; do echo "$(kv user "$line") $(kv sys "$line")"; done < "$WORK/$tag.runs" |
		awk '{ print $1 + $2 }' | median)
	sc=$(while read -r line; do kv syscalls "$line"; done < "$WORK/$tag.runs" | median)
	ready=$(grep -o 'ready in [0-9.]* s ([^)]*)' "$OUT/$tag.log" | tail -1)
	fin=$(grep -o 'finish in [0-9.]* s ([^)]*)' "$OUT/$tag.log" | tail -1)
	ok "$tf, engine $e: median of $PROFILE_STARTUP_RUNS one-block runs ($src to $dst): $wall s wall, $cpu s CPU, $sc system calls"
	{
		echo "== $tf, engine $e: median $wall s wall, $cpu s CPU, $sc system calls per run"
		echo "-- the daemon's phases (last run): pipeline ${ready:-?}; ${fin:-?}"
		grep -o '\(programs\|program\) loaded in [0-9.]* s' "$OUT/$tag.log" | tail -2 |
			sed 's/^/-- the last run: /'
		echo "-- by command (all CPUs, idle included):"
		top "$OUT/$tag-comm.txt" 8
		echo "-- by symbol (idle left out; % of the samples kept):"
		top "$OUT/$tag-sym.txt" 25
		echo
	} >> "$OUT/summary.txt"
	rm -f "$data"
}

: > "$OUT/summary.txt"
for tf in $PROFILE_TRANSFORMS; do
	for e in $PROFILE_ENGINES; do
		if [ "$tf" = startup ] || [ "$tf" = startup-gather ]; then
			startup "$e" "$tf"
			continue
		fi
		tag=$tf-$e
		config "$WORK/$tag.conf" "$e" "$tf"
		rm -rf "$WORK/state"/* "$D"/dst* "$D"/gathered
		sync
		echo 3 > /proc/sys/vm/drop_caches
		data=$WORK/data/$tag.data
		free0=$(awk '/^MemFree:/ { print $2 }' /proc/meminfo)
		line=$("$PERF" record -q -a ${PROFILE_CALLGRAPH:+-g} -e cpu-clock -F "$PROFILE_FREQ" -o "$data" -- \
			"$BT" run --count --log "$OUT/$tag.log" -- "$daemon" --config="$WORK/$tag.conf" --once \
			2>>"$OUT/$tag.log")
		rc=$(kv rc "$line")
		if [ "$rc" != 0 ] || [ ! -s "$data" ]; then
			nok "profile $tf, engine $e: runs under perf record (rc $rc; see artifacts/bench-profile/$tag.log)"
			tail -5 "$OUT/$tag.log" | sed 's/^/#   /'
			continue
		fi
		reports "$data" "$tag"
		samples=$(grep -m1 -o "Samples: [0-9.]*[KM]\? *of event" "$OUT/$tag-sym.txt" | grep -o "[0-9.]*[KM]\?" | head -1)
		fig=$(awk -v w="$(kv wall "$line")" -v u="$(kv user "$line")" -v s="$(kv sys "$line")" \
			-v c="$(kv io_uring_enter "$line")" -v m="$PROFILE_MB" 'BEGIN {
			printf "%.0f MiB/s, CPU %.2f user + %.2f sys s/GiB, %.0f io_uring_enter/GiB",
				m / w, u * 1024 / m, s * 1024 / m, c * 1024 / m }')
		# brd allocates and zeroes a page the first time one is written; the
		# daemon's own pages are its minor faults (MAP_POPULATE included)
		fig+=", MemFree $(( ($(awk '/^MemFree:/ { print $2 }' /proc/meminfo) - free0) >> 10 )) MiB"
		fig+=", $(kv minflt "$line") minor faults, peak RSS $(( $(kv maxrss_kb "$line") >> 10 )) MiB"
		ok "profile $tf, engine $e: $fig, ${samples:-?} samples outside idle"
		{
			echo "== $tf, engine $e: $fig"
			echo "-- by command (all CPUs, idle included):"
			top "$OUT/$tag-comm.txt" 8
			echo "-- by symbol (idle left out; % of the samples kept):"
			top "$OUT/$tag-sym.txt" 20
			if [ -n "${PROFILE_CALLGRAPH:-}" ]; then
				echo "-- who calls the symbols over 5 %:"
				"$PERF" report -i "$data" --stdio --no-children --sort sym --percent-limit 5 \
					-g caller,2,callee --comms "$comms" 2>/dev/null | top /dev/stdin 120
			fi
			echo
		} >> "$OUT/summary.txt"
		rm -f "$data"
	done
done
sed 's/^/# /' "$OUT/summary.txt"
plan
exit 0
