#!/bin/bash
# Scaling (issue 8 item 5): how wall time and CPU per GiB grow with the size
# of a copy and with the number of concurrent pipelines. Guest suite
# bench-scale (manual; `make bench-scale` selects it).
#
# For each size S (1G 4G 16G), number of pipelines N (1 2 4) and engine
# (uring bpf loop), alternating engines innermost: one iou-offloadd --once
# run with N pipelines in one daemon, pipeline i copying bytes
# [i*S/N, (i+1)*S/N) of the source to the same range of the destination.
# First, per engine and N, a run moving one block per pipeline: its fixed
# cost, which the table takes out of the "net" per-GiB figures. N > 1 runs
# only up to SCALE_MULTI_UPTO (16G: all; about 9 minutes under TCG).
#
# Medium: the virtio scratch disk (serial iou-scratch, VM_SCRATCH_MB), two
# partitions of the largest size, O_DIRECT. 16 GiB fits neither tmpfs nor
# brd in a guest on this host (both hold the data in guest RAM, and the host
# has 24 GiB), while the scratch disk is a sparse file on the host. The
# source is sparse too: `benchtool stamp` writes a 4 KiB stamp, derived from
# its offset and the run's seed, at the start of every block and leaves the
# rest zero; `benchtool verify-stamps` then reads the whole destination range
# and checks every stamp and every zero (a block not written keeps the
# previous run's seed and fails; one written to the wrong place fails).
#
# Per run: wall time, user and system CPU of the daemon (wait4; the loop
# engine's work inside io_uring_enter() and io-wq's workers count as the
# daemon's), exact io_uring_enter and system call counts (perf tracepoint
# counters). raw.jsonl and table.md (report.py scale) in $IOU_ARTIFACTS.
#
# Knobs (environment, or iou.scale_x=a,b on the kernel command line):
# SCALE_SIZES ("1G 4G 16G"), SCALE_PIPELINES ("1 2 4"), SCALE_ENGINES
# ("uring bpf loop"), SCALE_MULTI_UPTO (16G), SCALE_BS (1M), SCALE_QD (32),
# SCALE_RUNS (1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
BT=${BENCHTOOL:-$here/benchtool}
. "$here/common.sh"
cmdline_knobs scale
SCALE_SIZES=${SCALE_SIZES:-1G 4G 16G}
SCALE_PIPELINES=${SCALE_PIPELINES:-1 2 4}
SCALE_ENGINES=${SCALE_ENGINES:-uring bpf loop}
# copy: one destination range, checked whole after every run
SCALE_TRANSFORM=copy
SCALE_BS=${SCALE_BS:-1M}
SCALE_QD=${SCALE_QD:-32}
SCALE_RUNS=${SCALE_RUNS:-1}
SCALE_MULTI_UPTO=${SCALE_MULTI_UPTO:-16G}
OUT=${IOU_ARTIFACTS:-/run/iou-scale-out}
WORK=/run/iou-scale
mkdir -p "$OUT" "$WORK/state" "$WORK/logs"
RAW=$OUT/raw.jsonl
: > "$RAW"



daemon=$(command -v iou-offloadd) || skip_all "iou-offloadd is not installed in the guest"
BS=$(size_bytes "$SCALE_BS")
# a stamp at the start of every block, so that every block is checked
EVERY=$BS
[ "$EVERY" -gt $((4 << 20)) ] && EVERY=$((4 << 20))
max=0
for s in $SCALE_SIZES; do b=$(size_bytes "$s"); [ "$b" -gt "$max" ] && max=$b; done

dev=""
for b in /sys/block/vd*; do
	[ "$(cat "$b/serial" 2>/dev/null)" = iou-scratch ] && dev=/dev/${b##*/}
done
[ -n "$dev" ] || skip_all "no virtio scratch disk (serial iou-scratch): run with VM_SCRATCH_MB >= $((2 * (max >> 20) + 8))"
"$BT" gpt "$dev" 2 "$max" || skip_all "$dev cannot hold two partitions of $max bytes"
for _ in $(seq 50); do [ -b "${dev}2" ] && break; sleep 0.1; done
SRC=${dev}1 DST=${dev}2
accel=$("$BT" accel)
echo "# scale: accelerator $accel, kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB RAM"
echo "# medium: virtio scratch disk $dev (source $SRC, destination $DST, O_DIRECT), sparse source stamped every $EVERY bytes"
[ "$accel" = tcg ] && echo "# accelerator tcg: everything is emulated; compare figures as ratios within this run, and counts exactly"

# config N S ENGINE: N pipelines sharing S bytes
config() {
	local np=$1 size=$2 engine=$3 f=$WORK/run.conf part i
	part=$((size / np))
	{
		daemon_section "$WORK/state" "$engine" "$SCALE_QD" "$BS"
		echo "direct = yes"
		for i in $(seq 0 $((np - 1))); do
			echo
			echo "[pipeline p$i]"
			echo "transform = $SCALE_TRANSFORM"
			echo "source = $SRC"
			echo "offset = $((i * part))"
			echo "length = $part"
			echo "destination = $DST"
			echo "dest_offset = $((i * part))"
		done
	} > "$f"
	echo "$f"
}

for e in $SCALE_ENGINES; do
	f=$(config 1 "$BS" "$e")
	if ! out=$("$daemon" --check-config="$f" 2>&1); then
		skip "scale: engine $e" "iou-offloadd rejects it: $(head -1 <<<"$out")"
		SCALE_ENGINES=$(sed "s/\b$e\b//" <<<"$SCALE_ENGINES")
	fi
done

# one_run SIZE NAME NP ENGINE RUN KIND: stamp, copy, verify, record, TAP
seed=0
one_run() {
	local size=$1 size_name=$2 np=$3 e=$4 r=$5 kind=$6 what f log line rc v vr fig
	seed=$((seed + 1))
	what="engine $e, $size_name in $np pipeline(s), run $r"
	[ "$kind" = startup ] && what="engine $e, startup: one block in each of $np pipeline(s)"
	# a new seed each run: a block left unwritten shows as the old one
	if ! "$BT" stamp "$SRC" "$size" "$EVERY" "$seed"; then
		nok "scale: $what: stamping the source failed"
		return
	fi
	rm -rf "$WORK/state"/*
	f=$(config "$np" "$size" "$e")
	log=$WORK/logs/$e-$size_name-$np-$r.log
	sync
	echo 3 > /proc/sys/vm/drop_caches
	line=$("$BT" run --count --log "$log" -- "$daemon" --config="$f" --once 2>>"$log")
	rc=$(kv rc "$line")
	v=$("$BT" verify-stamps "$DST" "$size" "$EVERY" "$seed" 2>&1)
	vr=$?
	printf '{"system":"guest","accel":"%s","engine":"%s","transform":"%s","medium":"virtio","bs":%s,"qd":%s,"pipelines":%s,"run":%s,"bytes":%s,"wall_s":%s,"user_s":%s,"sys_s":%s,"rc":%s,"io_uring_enter":%s,"syscalls":%s,"verified":%s,"kind":"%s"}\n' \
		"$accel" "$e" "$SCALE_TRANSFORM" "$BS" "$SCALE_QD" "$np" "$r" "$size" \
		"$(kv wall "$line")" "$(kv user "$line")" "$(kv sys "$line")" "$rc" \
		"$(kv io_uring_enter "$line")" "$(kv syscalls "$line")" \
		"$([ $vr -eq 0 ] && echo true || echo false)" "$kind" >> "$RAW"
	fig=$(awk -v w="$(kv wall "$line")" -v u="$(kv user "$line")" -v s="$(kv sys "$line")" \
		-v c="$(kv io_uring_enter "$line")" -v b="$size" -v k="$kind" 'BEGIN {
		g = b / 1073741824
		if (k == "startup")
			printf "%.2f s, CPU %.2f user + %.2f sys s, %d io_uring_enter", w, u, s, c
		else
			printf "%.1f s (%.0f MiB/s), %.2f s/GiB wall, CPU %.2f user + %.2f sys s/GiB, %.1f io_uring_enter/GiB",
				w, b / 1048576 / w, w / g, u / g, s / g, c / g }')
	if [ "$rc" != 0 ]; then
		nok "scale: $what: exit status $rc"
		tail -5 "$log" | sed 's/^/#   /'
	elif [ $vr -ne 0 ]; then
		nok "scale: $what: destination as the source ($v)"
	else
		ok "scale: $what: $fig; destination verified"
	fi
	echo "# ($(( $(date +%s) - t_start )) s so far)"
}

t_start=$(date +%s)
# the fixed cost (daemon start, BPF loading and verification, ring setup),
# taken out of the per-GiB figures as "net" in the table
for np in $SCALE_PIPELINES; do
	for e in $SCALE_ENGINES; do
		one_run $((np * BS)) "$np-blocks" "$np" "$e" 0 startup
	done
done
for size_name in $SCALE_SIZES; do
	size=$(size_bytes "$size_name")
	for np in $SCALE_PIPELINES; do
		[ "$np" -gt 1 ] && [ "$size" -gt "$(size_bytes "$SCALE_MULTI_UPTO")" ] && continue
		for r in $(seq 1 "$SCALE_RUNS"); do
			for e in $SCALE_ENGINES; do
				one_run "$size" "$size_name" "$np" "$e" "$r" timed
			done
		done
	done
done
plan
if python3 "$here/report.py" scale --raw "$RAW" --md "$OUT/table.md" > /dev/null 2> "$WORK/report.err"; then
	sed 's/^/# /' "$OUT/table.md"
else
	sed 's/^/# report: /' "$WORK/report.err"
fi
cp "$WORK"/logs/*.log "$OUT/" 2>/dev/null
exit 0
