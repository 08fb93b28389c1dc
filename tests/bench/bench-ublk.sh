#!/bin/bash
# The measuring side of `make bench-ublk` (guest suite bench-ublk, manual):
# ublk devices served by iou-offloadd against the kernel's own dm targets
# over the same brd ram disks, in one boot.
#
# Configurations (each target over /dev/ram0..N, the same members for all):
#   dm        dm-linear (ram0, ram1), dm-stripe (ram0..3, 64K chunks),
#             dm-raid1 (ram0, ram1; core log, nosync: no resync in the way)
#   ublk bpf  [device] with engine = bpf, the same target and members
#   ublk uring the same with engine = uring
#   each on both data paths: data_path = zero-copy (the request's own
#             pages, registered by the driver: READ/WRITE_FIXED at offsets
#             into them) and data_path = copy (ublk copies every byte
#             through a tag buffer); the gather on zero copy needs the bpf
#             engine (IORING_OP_BPF from the request's pages)
#   stripe-gather: the ublk stripe with stripe_io = gather (the units of one
#             member in a request gathered into one write: IORING_OP_BPF on
#             bpf, memcpy on uring) beside the default per-unit writes
#   integrity: ublk bpf zero copy with integrity = crc32c (each 4 KiB summed
#             in the kernel on write, checked on read; the sums in a file of
#             the state_dir), beside the same without (issue 32), and the same
#             dm target over dm-integrity members beside dm over the bare ones
#             (bitmap mode, crc32c tags per 4 KiB, 1 MiB per bitmap bit: the
#             daemon's dirty-region map; formatted and wiped before each run,
#             as integritysetup format does, so no read meets an unset tag)
# Workloads (fio, io_uring, O_DIRECT, fixed buffers, time based):
#   4k-qd1 and 4k-qd32: random 4K, half reads, half writes (IOPS);
#   1m-qd8: sequential 1M, half reads, half writes (MiB/s).
# Rounds alternate: round r runs every configuration once, the daemon
# started afresh for each. Per run: fio's figures (JSON), fio's CPU (wait4's
# rusage through benchtool run), the daemon's CPU (/proc/PID/stat: every
# thread, io-wq's included) and the whole guest's busy CPU (/proc/stat: also
# dm-raid1's kmirrord and other kernel workers), plus the daemon's exact
# counts after each configuration (IORING_OP_BPF ops and bytes, bytes
# memcpy'd by the daemon, bytes the driver copied through tag buffers, the
# data path the device ran). A TAP test per configuration says it ran with no error (no
# verdict on speed); one per target says ublk and dm lay the data out the
# same way over the members. After the rounds, with perf in the payload,
# a cpu-clock profile of dm and ublk bpf (zero copy and copy) per target at
# UBLK_PROFILE.
# Raw records go to $IOU_ARTIFACTS/raw.jsonl; run-bench.sh ublk turns them
# into the table, JSON and plot (report_ublk.py).
#
# Knobs (environment, or iou.ublk_x=a,b on the kernel command line):
# UBLK_MB (256: MiB per member), UBLK_RUNS (3), UBLK_RUNTIME (5 s per fio
# run), UBLK_TARGETS ("linear stripe stripe-gather mirror"), UBLK_ENGINES
# ("bpf uring"), UBLK_PATHS ("zero-copy copy"), UBLK_WORKLOADS ("4k-qd1
# 4k-qd32 1m-qd8"; also 4k-qd32-j2 and 1m-qd8-j2: the same depth from two
# fio jobs, which two queues can take on two CPUs; 1m-read: sequential reads
# at qd8, a mirror's legs against dm-raid1's one), UBLK_QUEUES (1; a list,
# "1 2", runs each ublk configuration with each count: what a second queue buys),
# UBLK_PROFILE (the workload profiled: "4k-qd32"; "none" for no profile),
# UBLK_INTEGRITY ("none"; "crc32c": each target's bpf zero-copy device again
# with integrity = crc32c (at each UBLK_QUEUES count), and dm over
# dm-integrity members; the profile
# then covers both of them too).
set -u
here=$(cd "$(dirname "$0")" && pwd)
BT=${BENCHTOOL:-$here/benchtool}
. "$here/common.sh"
cmdline_knobs ublk
UBLK_MB=${UBLK_MB:-256}
UBLK_RUNS=${UBLK_RUNS:-3}
UBLK_RUNTIME=${UBLK_RUNTIME:-5}
UBLK_TARGETS=${UBLK_TARGETS:-linear stripe stripe-gather mirror}
UBLK_ENGINES=${UBLK_ENGINES:-bpf uring}
UBLK_PATHS=${UBLK_PATHS:-zero-copy copy}
UBLK_WORKLOADS=${UBLK_WORKLOADS:-4k-qd1 4k-qd32 1m-qd8}
UBLK_QUEUES=${UBLK_QUEUES:-1}
UBLK_PROFILE=${UBLK_PROFILE:-4k-qd32}
UBLK_INTEGRITY=${UBLK_INTEGRITY:-none}
UNIT=$((64 << 10))
OUT=${IOU_ARTIFACTS:-/run/iou-bench-ublk-out}
WORK=/run/iou-bench-ublk
RAW=$OUT/raw.jsonl
mkdir -p "$OUT/logs" "$WORK/state"
: > "$RAW"

daemon=$(command -v iou-offloadd) || skip_all "iou-offloadd is not installed in the guest"
command -v fio > /dev/null || skip_all "fio is not installed"
command -v dmsetup > /dev/null || skip_all "dmsetup is not installed (the dm side of the comparison)"
[ -e /dev/ublk-control ] || skip_all "no /dev/ublk-control (kernel without CONFIG_BLK_DEV_UBLK)"
[ -x "$BT" ] || skip_all "no benchtool (suite bench)"
BYTES=$((UBLK_MB << 20))
for i in 0 1 2 3; do
	# not n: tap.sh counts the tests in it
	sz=$(blockdev --getsize64 /dev/ram$i 2>/dev/null || echo 0)
	[ "$sz" -ge "$BYTES" ] || skip_all "/dev/ram$i has $sz bytes, needs $BYTES (boot with brd.rd_nr=4 brd.rd_size=$((BYTES >> 10)))"
done
accel=$("$BT" accel)
HZ=$(getconf CLK_TCK)
SECT=$((BYTES / 512))
echo "# bench-ublk: accelerator $accel, kernel $(uname -r), $(nproc) CPUs, $UBLK_MB MiB per member (brd), $UBLK_RUNS rounds of $UBLK_RUNTIME s per fio run"

# members of TARGET: linear and mirror over two ram disks, stripe over four
members() { case "$1" in stripe*) echo /dev/ram0 /dev/ram1 /dev/ram2 /dev/ram3 ;; *) echo /dev/ram0 /dev/ram1 ;; esac; }
# the fill is brd's pages allocated once, so no run reads unallocated zeros
for m in $(members stripe); do "$BT" fill "$m" "$BYTES" || skip_all "filling $m failed"; done

# ---- dm ---------------------------------------------------------------------
dm_table() {	# TARGET SECTORS_PER_MEMBER MEMBER...
	local tf=$1 sect=$2
	shift 2
	case "$tf" in
	linear) printf '0 %d linear %s 0\n%d %d linear %s 0\n' "$sect" "$1" "$sect" "$sect" "$2" ;;
	stripe) echo "0 $((4 * sect)) striped 4 $((UNIT / 512)) $1 0 $2 0 $3 0 $4 0" ;;
	mirror) echo "0 $sect mirror core 2 1024 nosync 2 $1 0 $2 0" ;;
	esac
}
# dm-integrity on MEMBER as iou-intN, formatted as integritysetup format does:
# a zeroed superblock makes the target format the member, its status then
# gives the sectors it provides, and a wipe through it sets every tag
INT_ARGS="4 B 3 internal_hash:crc32c block_size:4096 sectors_per_bit:2048"
INT_SECT=0
int_up() {	# MEMBER N -> INT_SECT (sectors provided, a whole MiB)
	local m=$1 name=iou-int$2 prov
	dd if=/dev/zero of="$m" bs=4096 count=1 oflag=direct conv=notrunc status=none || return 1
	echo "0 8 integrity $m 0 $INT_ARGS" | dmsetup create "$name" 2>> "$OUT/logs/dmsetup.log" || return 1
	prov=$(dmsetup status "$name" | awk '{ print $5 }')
	dmsetup remove --retry "$name" 2>> "$OUT/logs/dmsetup.log"
	INT_SECT=$(( ${prov:-0} / 2048 * 2048 ))
	[ "$INT_SECT" -gt 0 ] || return 1
	echo "0 $INT_SECT integrity $m 0 $INT_ARGS" | dmsetup create "$name" 2>> "$OUT/logs/dmsetup.log" || return 1
	udevadm settle 2>/dev/null
	# to its end: dd's ENOSPC there is the end, not a failure
	dd if=/dev/zero of="/dev/mapper/$name" bs=1M oflag=direct status=none 2> /dev/null
	# udev's probe of the new device read unset tags (the mismatch count
	# has it): what the wipe wrote must now read back
	dd if="/dev/mapper/$name" of=/dev/null bs=1M count=4 iflag=direct status=none 2>> "$OUT/logs/dmsetup.log"
}
dm_up() {	# TARGET [INTEGRITY] -> DEV: dm over the bare members, or over dm-integrity ones
	local tf=$1 integ=${2:--} ms=() i=0 m sect=$SECT
	for m in $(members "$tf"); do
		if [ "$integ" = - ] || [ "$integ" = none ]; then
			ms+=("$m")
		else
			int_up "$m" $i || return 1
			ms+=("/dev/mapper/iou-int$i")
			sect=$INT_SECT
		fi
		i=$((i + 1))
	done
	dm_table "$tf" "$sect" "${ms[@]}" | dmsetup create iou-bench 2>> "$OUT/logs/dmsetup.log" || return 1
	udevadm settle 2>/dev/null
	DEV=/dev/mapper/iou-bench
	[ -b "$DEV" ] || DEV=/dev/dm-$(dmsetup info -c --noheadings -o minor iou-bench | tr -d ' ')
	[ -b "$DEV" ]
}
dm_down() {
	local n
	udevadm settle 2>/dev/null
	dmsetup remove --retry iou-bench 2>> "$OUT/logs/dmsetup.log"
	for n in 0 1 2 3; do
		dmsetup info "iou-int$n" > /dev/null 2>&1 && dmsetup remove --retry "iou-int$n" 2>> "$OUT/logs/dmsetup.log"
	done
	return 0
}

# ---- ublk ---------------------------------------------------------------------
STATUS=$WORK/state/status
# KEY of the device in the daemon's status file
dst() {
	awk -v k="dev_$1" -F= '$1 == k { v = substr($0, length(k) + 2) } END { print v }' "$STATUS" 2>/dev/null
}
DPID=""
ublk_up() {	# TARGET ENGINE PATH [QUEUES [INTEGRITY]] -> DEV, DPID
	local tf=$1 engine=$2 path=${3:-auto} queues=${4:-1} integ=${5:-none} conf=$WORK/ublk.conf m
	{
		echo "[daemon]"
		echo "state_dir = $WORK/state"
		echo "runtime_dir = $WORK/state"
		echo "log_level = notice"
		echo "[device bench]"
		echo "target = ${tf%-gather}"
		echo "engine = $engine"
		echo "data_path = $path"
		echo "nr_queues = $queues"
		echo "queue_depth = 64"
		echo "max_io_size = 1M"
		# 64 tags x 1M / 4K: 16384 of the BPF program's 114688 device sums a queue
		[ "$integ" != none ] && echo "integrity = $integ"
		case "$tf" in stripe*) echo "stripe_unit = $((UNIT >> 10))K" ;; esac
		[ "$tf" = stripe-gather ] && echo "stripe_io = gather"
		for m in $(members "$tf"); do echo "backing = $m"; done
	} > "$conf"
	rm -rf "${WORK:?}/state"/*
	# glibc told not to copy with rep movsb, which TCG runs about 50x slower
	# than a vector loop (bench.sh's BENCH_MOVSB=off): the uring gather's
	# memcpy of 64K units would be timed on the emulator, not on its design
	GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1073741824 \
		"$daemon" --config="$conf" >> "$OUT/logs/daemon.log" 2>&1 &
	DPID=$!
	DEV=""
	# integrity: a new device's sums are taken from its members first
	for _ in $(seq 300); do
		DEV=$(dst path)
		[ -n "$DEV" ] && [ -b "$DEV" ] && break
		kill -0 $DPID 2>/dev/null || break
		sleep 0.2
	done
	udevadm settle 2>/dev/null
	[ -n "$DEV" ] && [ -b "$DEV" ]
}
ublk_down() {
	[ -n "$DPID" ] || return 0
	kill -TERM $DPID 2>/dev/null
	wait $DPID
	DPID=""
}
# the daemon's exact counts, as they stand (the status file: every second)
ublk_counts() {
	local k v sep=""
	sleep 1.1
	for k in reads writes bytes_read bytes_written bpf_ops bpf_bytes user_copied driver_copied errors sums mismatches filled; do
		v=$(dst $k)
		case "$k" in reads|writes|bytes_*|errors) printf '%s"dev_%s":%s' "$sep" "$k" "${v:-null}" ;;
		*) printf '%s"%s":%s' "$sep" "$k" "${v:-null}" ;; esac
		sep=,
	done
	printf ',"data_path_run":"%s"' "$(dst data_path)"
}

# ---- one fio run --------------------------------------------------------------
# utime + stime of PID in ticks; busy ticks of the whole guest
proc_ticks() { [ -n "$1" ] && awk '{ sub(/.*\) /, ""); print $12 + $13 }' /proc/$1/stat 2>/dev/null || echo 0; }
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
workload_args() {
	case "$1" in
	4k-qd1) echo "--rw=randrw --bs=4k --iodepth=1" ;;
	4k-qd32) echo "--rw=randrw --bs=4k --iodepth=32" ;;
	1m-qd8) echo "--rw=rw --bs=1M --iodepth=8" ;;
	# the same depth from two submitters (fio sums them: group_reporting)
	4k-qd32-j2) echo "--rw=randrw --bs=4k --iodepth=16 --numjobs=2 --group_reporting" ;;
	1m-qd8-j2) echo "--rw=rw --bs=1M --iodepth=4 --numjobs=2 --group_reporting" ;;
	# sequential reads alone: what a mirror's legs serve side by side (read_policy)
	1m-read) echo "--rw=read --bs=1M --iodepth=8" ;;
	*) return 1 ;;
	esac
}
# fio_run DEV WORKLOAD JSON: fio's own figures in JSON, one "k=v" line of the rest
fio_run() {
	local dev=$1 wl=$2 json=$3 line d0 d1 b0 b1
	d0=$(proc_ticks "$DPID"); b0=$(busy_ticks)
	# shellcheck disable=SC2046
	line=$("$BT" run --log "$json.err" -- fio --name=b --filename="$dev" --ioengine=io_uring \
		--direct=1 --fixedbufs --norandommap --randrepeat=0 --time_based \
		--runtime="$UBLK_RUNTIME" $(workload_args "$wl") --output-format=json --output="$json" \
		2>>"$json.err")
	d1=$(proc_ticks "$DPID"); b1=$(busy_ticks)
	echo "$line daemon_cpu=$(awk -v a="$d0" -v b="$d1" -v h="$HZ" 'BEGIN { printf "%.3f", (b - a) / h }')" \
		"busy_cpu=$(awk -v a="$b0" -v b="$b1" -v h="$HZ" 'BEGIN { printf "%.3f", (b - a) / h }')"
}
# fio's JSON -> "ios=.. read_ios=.. write_ios=.. read_bytes=.. write_bytes=.. runtime_ms=.. error=.."
fio_figures() {
	python3 - "$1" <<-'EOF'
	import json, sys
	try:
	    t = open(sys.argv[1]).read()
	    j = json.loads(t[t.index("{"):])["jobs"][0]
	except Exception as e:
	    print("error=-1"); sys.exit(0)
	r, w = j["read"], j["write"]
	ms = max(r["runtime"], w["runtime"])
	print(f"ios={r['total_ios'] + w['total_ios']} read_ios={r['total_ios']} write_ios={w['total_ios']} "
	      f"read_bytes={r['io_bytes']} write_bytes={w['io_bytes']} runtime_ms={ms} error={j['error']}")
	EOF
}

# ---- configurations -----------------------------------------------------------
configs=()	# kind|target|engine|path|queues|integrity
for tf in $UBLK_TARGETS; do
	[ "$tf" != stripe-gather ] && configs+=("dm|$tf|-|-|-|-")
	for p in $UBLK_PATHS; do
		for e in $UBLK_ENGINES; do
			# memcpy cannot reach the request's pages: that gather copies
			[ "$tf" = stripe-gather ] && [ "$p" = zero-copy ] && [ "$e" = uring ] && continue
			for q in $UBLK_QUEUES; do configs+=("ublk|$tf|$e|$p|$q|none"); done
		done
	done
	# integrity: on the bpf engine's zero-copy path only (the sums need both),
	# and dm over dm-integrity members beside it
	for i in $UBLK_INTEGRITY; do
		{ [ "$i" = none ] || [ "$tf" = stripe-gather ]; } && continue
		configs+=("dm|$tf|-|-|-|$i")
		# a queue sums on its own thread: UBLK_QUEUES says on how many
		for q in $UBLK_QUEUES; do configs+=("ublk|$tf|bpf|zero-copy|$q|$i"); done
	done
done
declare -A FAILED=() RUNS=() RANPATH=()
label() {
	local k t e p q i
	IFS='|' read -r k t e p q i <<<"$1"
	[ "$k" = dm ] && echo "dm $t$([ "$i" = - ] || echo " over dm-integrity ($i)")" ||
		echo "ublk $t, engine $e, data_path $p, nr_queues $q$([ "$i" = none ] || echo ", integrity $i")"
}
record() {	# CONFIG ROUND WORKLOAD LINE FIO COUNTS
	local k t e p q i
	IFS='|' read -r k t e p q i <<<"$1"
	[ "$q" = - ] && q=0
	printf '{"system":"guest","accel":"%s","kind":"%s","target":"%s","engine":"%s","path":"%s","queues":%s,"integrity":"%s","workload":"%s","round":%s,"runtime_s":%s,"member_mb":%s' \
		"$accel" "$k" "$t" "$e" "$p" "$q" "$i" "$3" "$2" "$UBLK_RUNTIME" "$UBLK_MB"
	local x
	for x in $4 $5; do
		case "${x#*=}" in ''|*[!0-9.-]*) continue ;; esac
		printf ',"%s":%s' "${x%%=*}" "${x#*=}"
	done
	[ -n "$6" ] && printf ',%s' "$6"
	echo "}"
}

t_start=$(date +%s)
for r in $(seq 1 "$UBLK_RUNS"); do
	for c in "${configs[@]}"; do
		[ -n "${FAILED[$c]:-}" ] && continue
		IFS='|' read -r kind tf engine path queues integ <<<"$c"
		if [ "$kind" = dm ]; then
			dm_up "$tf" "$integ" || { FAILED[$c]="dmsetup create failed: $(tail -2 "$OUT/logs/dmsetup.log" | tr '\n' ' ')"; dm_down; continue; }
		else
			ublk_up "$tf" "$engine" "$path" "$queues" "$integ" || { FAILED[$c]="the daemon did not bring the device up: $(tail -3 "$OUT/logs/daemon.log" | tr '\n' ' ')"; ublk_down; continue; }
			RANPATH[$c]=$(dst data_path)
		fi
		lines=()
		for wl in $UBLK_WORKLOADS; do
			json=$OUT/logs/${kind}-${tf}-${engine}-${path}-q${queues}-${integ}-$wl-r$r.json
			line=$(fio_run "$DEV" "$wl" "$json")
			fig=$(fio_figures "$json")
			lines+=("$wl|$line|$fig")
			if [ "$(kv rc "$line")" != 0 ] || [ "$(kv error "$fig")" != 0 ]; then
				FAILED[$c]="fio $wl, round $r: rc $(kv rc "$line"), error $(kv error "$fig"): $(tail -2 "$json.err" | tr '\n' ' ')"
			fi
		done
		counts=""
		[ "$kind" = ublk ] && counts=$(ublk_counts)
		for l in "${lines[@]}"; do
			IFS='|' read -r wl line fig <<<"$l"
			record "$c" "$r" "$wl" "$line" "$fig" "$counts" >> "$RAW"
		done
		if [ "$kind" = dm ]; then dm_down; else ublk_down; fi
		RUNS[$c]=$r
	done
	echo "# round $r done at $(( $(date +%s) - t_start )) s"
done

for c in "${configs[@]}"; do
	if [ -n "${FAILED[$c]:-}" ]; then
		nok "$(label "$c"): fio ran every workload with no error (${FAILED[$c]})"
	else
		ok "$(label "$c"): fio ran $UBLK_WORKLOADS with no error in ${RUNS[$c]:-0} rounds"
	fi
	IFS='|' read -r kind tf engine path queues integ <<<"$c"
	[ "$kind" = ublk ] && [ -z "${FAILED[$c]:-}" ] &&
		check "$(label "$c"): the device ran on the data path asked for (status: ${RANPATH[$c]:-none})" \
			[ "${RANPATH[$c]:-}" = "$path" ]
done

# ---- the same layout: written through ublk, read back through dm ---------------
head -c $((16 << 20)) /dev/urandom > "$WORK/pattern"
for tf in $UBLK_TARGETS; do
	[ "$tf" = stripe-gather ] && continue
	# at the device's start and across the members' boundary (linear)
	off=0	# MiB
	[ "$tf" = linear ] && off=$(((BYTES >> 20) - 8))
	if ublk_up "$tf" bpf zero-copy && dd if="$WORK/pattern" of="$DEV" bs=1M seek=$off oflag=direct status=none; then
		ublk_down
		if dm_up "$tf" && cmp -s "$WORK/pattern" <(dd if="$DEV" bs=1M skip=$off count=16 iflag=direct status=none) &&
		   { [ "$tf" != mirror ] || cmp -s -n $((16 << 20)) /dev/ram0 /dev/ram1; }; then
			ok "ublk $tf and dm $tf lay data out the same way over the same members (16 MiB written through ublk read back through dm)"
		else
			nok "ublk $tf and dm $tf lay data out the same way over the same members"
		fi
		dm_down
	else
		nok "ublk $tf and dm $tf lay data out the same way: writing through ublk failed"
		ublk_down
	fi
done

# ---- where the CPU goes: dm against ublk bpf (both paths) at one workload ----------
PERF=$(command -v perf || ls "$here"/../[0-9][0-9]-bench-profile/perf 2>/dev/null | head -1)
if [ "$UBLK_PROFILE" = none ]; then
	:
elif [ -z "$PERF" ] || [ ! -x "$PERF" ]; then
	skip "profile of dm and ublk at $UBLK_PROFILE" "no perf in the guest (run-bench.sh ublk builds it)"
else
	echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
	echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
	: > "$OUT/profile.txt"
	for tf in $UBLK_TARGETS; do
		kinds="dm ublk-zero-copy ublk-copy"
		[ "$UBLK_INTEGRITY" = none ] || [ "$tf" = stripe-gather ] || kinds="$kinds dm-integrity ublk-integrity"
		for kind in $kinds; do
			[ "$tf" = stripe-gather ] && [ "$kind" = dm ] && continue
			tag=$kind-$tf
			case "$kind" in
			dm) dm_up "$tf" ;;
			dm-integrity) dm_up "$tf" crc32c ;;
			ublk-integrity) ublk_up "$tf" bpf zero-copy 1 crc32c ;;
			*) ublk_up "$tf" bpf "${kind#ublk-}" ;;
			esac || { nok "profile $tag: device up"; dm_down; ublk_down; continue; }
			data=$WORK/$tag.perf
			"$PERF" record -q -a -e cpu-clock -F 499 -o "$data" -- \
				fio --name=p --filename="$DEV" --ioengine=io_uring --direct=1 --fixedbufs \
				--norandommap --randrepeat=0 --time_based --runtime="$UBLK_RUNTIME" \
				$(workload_args "$UBLK_PROFILE") --output-format=json --output="$WORK/$tag.json" \
				> "$OUT/logs/perf-$tag.log" 2>&1
			"$PERF" report -i "$data" --stdio --no-children --sort comm --percent-limit 1 \
				> "$OUT/profile-$tag-comm.txt" 2>/dev/null
			"$PERF" report -i "$data" --stdio --no-children --sort sym --percent-limit 0.5 \
				--comms "$(grep -v '^#' "$OUT/profile-$tag-comm.txt" | awk 'NF && $2 != "swapper" { print $2 }' | paste -sd, -)" \
				> "$OUT/profile-$tag-sym.txt" 2>/dev/null
			{
				echo "== $tag, $UBLK_PROFILE: $(fio_figures "$WORK/$tag.json")"
				echo "-- by command (idle included):"
				grep -v '^#' "$OUT/profile-$tag-comm.txt" | grep -v '^[[:space:]]*$' | head -6
				echo "-- by symbol (idle left out):"
				grep -v '^#' "$OUT/profile-$tag-sym.txt" | grep -v '^[[:space:]]*$' | head -15
				echo
			} >> "$OUT/profile.txt"
			case "$kind" in dm*) dm_down ;; *) ublk_down ;; esac
			rm -f "$data"
		done
	done
	check "profiles of dm and ublk bpf (zero copy, copy$([ "$UBLK_INTEGRITY" = none ] || echo ", both with integrity")) at $UBLK_PROFILE recorded" [ -s "$OUT/profile.txt" ]
fi
echo "# all done in $(( $(date +%s) - t_start )) s"
plan
exit 0
