#!/bin/bash
# The measuring side of `make bench`: data movers side by side, in one run.
#
#   bench.sh guest   in the guest, as suite bench (tests/bench/run): media
#                    brd ram disks with O_DIRECT (the default), tmpfs and a
#                    virtio disk; exact io_uring_enter, system call and io-wq
#                    punt counts from perf tracepoint counters
#   bench.sh host    on the host's own kernel, unemulated: tmpfs only, no BPF
#                    (nothing is loaded into the host kernel), the daemon only
#                    with engine = uring; counts from one extra run under
#                    strace; then durability.sh (the daemon's default config
#                    against checkpoint_interval = 1G, dd conv=fdatasync and
#                    cp + sync, quiet and under load; HOST_DURABILITY=0 leaves
#                    it out)
#
# What runs, for each medium and block size, alternating (round r runs every
# configuration once, for r = 1..runs):
#   memcpy   the in-memory limit: userspace memcpy() of the same bytes; and
#            memcpy-vec, glibc told not to use rep movsb (slow when emulated)
#   dd       bs = the block size (O_DIRECT and conv=fsync on block devices)
#   cp       coreutils cp (its own block size)
#   fio      ioengine=io_uring, fixedbufs: a read job on the source and a write
#            job on the destination, at queue depths 1, 8, 32
#   engines  iou-offloadd --once with engine = uring, bpf, loop for copy, mirror
#            (2 destinations), stripe (4 destinations, one unit per member
#            per block: nothing to shuffle) and stripe-multi (4 destinations,
#            stripe_unit = block / 16: four units of each member scattered
#            through every block, which the engine gathers: stripe_io =
#            gather) and stripe-perunit (the same layout with stripe_io =
#            per-unit, the default: one write per unit from the read buffer,
#            nothing gathered); destripe, destripe-multi and destripe-perunit
#            the reverse (transform = gather, gather = destripe: 4 member
#            sources, one destination, the same units and stripe_io), if the
#            binary is there and accepts the engine (else a skip says why)
# Per run, besides wall and CPU time: context switches (wait4's rusage),
# io_uring_enter calls, system calls and io-wq punts (guest, exact), and for
# the daemon its own exact counts from its status file: CQEs, IORING_OP_BPF
# completions, bytes memcpy'd (userspace and uring_bpf_memcpy()).
# Per configuration: one TAP test (it ran, and what it copied compares equal),
# never a verdict on speed. Raw figures go to raw.jsonl (a JSON record per run),
# the summary to table.md / summary.json (report.py), all in $IOU_ARTIFACTS
# (guest) or $BENCH_OUT (host).
#
# Knobs (environment, or on the guest's kernel command line as iou.bench_X=v
# with commas for lists): BENCH_MB (data per run, default 1024 when the media
# include brd, else 128), BENCH_RUNS (5),
# BENCH_BS ("1M" with brd, else "64K 1M"), BENCH_QD ("1 8 32"), BENCH_MEDIA
# ("brd"; all: "brd tmpfs virtio"; also "nullb": null_blk without memory,
# the movers' own cost alone), BENCH_TOOLS ("memcpy dd cp fio engines"),
# BENCH_ENGINES ("uring bpf loop"), BENCH_TRANSFORMS ("copy mirror stripe
# stripe-multi stripe-perunit destripe-multi destripe-perunit"; also
# "destripe", and any name ending in -sum, e.g. copy-sum: checksum = crc32c
# on that transform), BENCH_ENGINE_QD
# ("32"; all: "1 8 32"), BENCH_MEMCPY_MB (64: bytes per memcpy run),
# BENCH_MOVSB ("off": every mover but the memcpy row runs with glibc told not
# to use rep movsb; "on": glibc's own choice).
#
# Why BENCH_MOVSB=off: on this guest CPU (QEMU -cpu max) glibc 2.36 copies
# 8 KiB .. 512 KiB with rep movsb (rep_movsb_threshold 0x2000, stop threshold
# 0x80000, the same with 1 and 2 CPUs), and TCG emulates rep movsb about 50x
# slower than a vector loop (64 MiB in 256 KiB copies: 1.80 s against
# 0.039 s). A mover whose copies fall in that range (the uring engine's
# stripe shuffle, cp, dd's buffers) was then timed on the emulator's rep
# movsb, not on its own design: that was the stripe at 1M falling to
# 36 MiB/s with 26 s of user CPU per GiB: the rate of rep movsb here. Real
# CPUs with ERMS run it at full speed. The memcpy row keeps glibc's choice,
# so the artefact stays visible next to memcpy-vec.
set -u
mode=${1:-guest}
here=$(cd "$(dirname "$0")" && pwd)
BT=${BENCHTOOL:-$here/benchtool}

# ---- knobs ---------------------------------------------------------------
. "$here/common.sh"
[ "$mode" = guest ] && cmdline_knobs bench
# The main medium is what users have: block devices with O_DIRECT (brd,
# which like null_blk supports NOWAIT, so io_uring issues inline instead of
# punting every request to io-wq as it does on tmpfs), 1 GiB per run. The
# default keeps `make bench` warm within about 30 minutes on 2 cores: brd
# only, 1M blocks, 5 rounds, engines at depth 32 (fio at 1, 8 and 32); see
# tests/bench/README.md for the measured times and the full matrix
# (BENCH_MEDIA="brd tmpfs virtio" BENCH_BS="64K 1M" BENCH_ENGINE_QD="1 8 32").
[ "$mode" = guest ] && BENCH_MEDIA=${BENCH_MEDIA:-brd}
if [ "$mode" = guest ] && [[ " $BENCH_MEDIA " == *" brd "* ]]; then
	BENCH_MB=${BENCH_MB:-1024}
	BENCH_BS=${BENCH_BS:-1M}
fi
BENCH_MB=${BENCH_MB:-128}
BENCH_RUNS=${BENCH_RUNS:-5}
BENCH_BS=${BENCH_BS:-64K 1M}
BENCH_QD=${BENCH_QD:-1 8 32}
BENCH_ENGINE_QD=${BENCH_ENGINE_QD:-32}
BENCH_TOOLS=${BENCH_TOOLS:-memcpy dd cp fio engines}
BENCH_ENGINES=${BENCH_ENGINES:-uring bpf loop}
BENCH_TRANSFORMS=${BENCH_TRANSFORMS:-copy mirror stripe stripe-multi stripe-perunit destripe-multi destripe-perunit}
BENCH_MOVSB=${BENCH_MOVSB:-off}
NO_MOVSB=(env GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=1073741824)
if [ "$mode" = guest ]; then
	OUT=${IOU_ARTIFACTS:-/run/iou-bench-out}
	WORK=/run/iou-bench
	count_args=(--count)
else
	BENCH_MEDIA=tmpfs
	OUT=${BENCH_OUT:?BENCH_OUT: where the host results go}
	WORK=$(mktemp -d /dev/shm/iou-bench.XXXXXX)
	count_args=()
	# belt and braces: the daemon never probes or loads BPF on the host
	export IOU_OFFLOADD_NO_BPF=1
fi
BYTES=$((BENCH_MB << 20))
BENCH_MEMCPY_MB=${BENCH_MEMCPY_MB:-64}
MEMCPY_BYTES=$((BENCH_MEMCPY_MB << 20))
[ "$MEMCPY_BYTES" -gt "$BYTES" ] && MEMCPY_BYTES=$BYTES
LEN=$BYTES	# bytes the next command moves: BYTES, or one block for a startup run
MAX_DESTS=4
mkdir -p "$OUT" "$WORK/logs" "$WORK/state" "$WORK/conf"
RAW=$OUT/raw.jsonl
: > "$RAW"

accel=$("$BT" accel)
system=$mode
# the daemon: installed in the guest image, or built in the repo on the host
daemon=$(command -v iou-offloadd 2>/dev/null || true)
[ -z "$daemon" ] && [ -x "$here/../../daemon/iou-offloadd" ] && daemon=$(cd "$here/../../daemon" && pwd)/iou-offloadd

cleanup() {
	[ "$mode" = host ] && rm -rf "$WORK"
	[ "$mode" = guest ] && mountpoint -q "$WORK/tmpfs" && umount "$WORK/tmpfs"
}
trap cleanup EXIT

size_name() {
	local b=$1
	if [ "$b" -ge $((1 << 20)) ] && [ $((b % (1 << 20))) -eq 0 ]; then echo "$((b >> 20))M"
	elif [ "$b" -ge 1024 ] && [ $((b % 1024)) -eq 0 ]; then echo "$((b >> 10))K"
	else echo "$b"; fi
}

# ---- media ---------------------------------------------------------------
# setup_<name> sets MSRC, MDSTS (MAX_DESTS of them) and MDIRECT, or returns 1
# with $why set. The source is filled with a pattern once. Where a destripe
# is measured (want_destripe) it also sets MMEMBERS, the MAX_DESTS sources
# of the destripe, each holding its share of BENCH_MB (filled once), and
# MGDST, the destripe's destination; or MGWHY, why that medium cannot.
declare -A MSRC MDIRECT MDSTS MWHY MMEMBERS MGDST MGWHY
want_destripe=0
[[ " $BENCH_TRANSFORMS " == *" destripe"* ]] && want_destripe=1
# fill_members MEDIUM PATH...: each member its share of the stream, once
fill_members() {
	local m=$1 p
	shift
	for p in "$@"; do
		"$BT" fill "$p" $((BYTES / MAX_DESTS)) || { MGWHY[$m]="filling $p failed"; return 1; }
	done
	MMEMBERS[$m]="$*"
}
setup_tmpfs() {
	local dir=$WORK/tmpfs i
	if [ "$mode" = guest ]; then
		mkdir -p "$dir"
		# the source, the destinations, the destripe's members and its destination
		mount -t tmpfs -o size=$(((MAX_DESTS + 4) * BENCH_MB + 16))m iou-bench "$dir" ||
			{ why="mount tmpfs failed"; return 1; }
	else
		mkdir -p "$dir"
		[ "$(stat -f -c %T "$dir")" = tmpfs ] || { why="$dir is not on tmpfs"; return 1; }
	fi
	"$BT" fill "$dir/src" "$BYTES" || { why="filling $dir/src failed"; return 1; }
	MSRC[tmpfs]=$dir/src
	MDIRECT[tmpfs]=0
	MDSTS[tmpfs]=""
	for i in $(seq 1 $MAX_DESTS); do MDSTS[tmpfs]+=" $dir/dst$i"; done
	[ "$want_destripe" = 1 ] && fill_members tmpfs $(seq -f "$dir/member%g" 1 $MAX_DESTS) &&
		MGDST[tmpfs]=$dir/gathered
	return 0
}
blockdev_bytes() { blockdev --getsize64 "$1" 2>/dev/null || echo 0; }
setup_brd() {
	local i n
	for i in $(seq 0 $MAX_DESTS); do
		n=$(blockdev_bytes /dev/ram$i)
		[ "$n" -ge "$BYTES" ] || { why="/dev/ram$i has $n bytes, needs $BYTES (boot with brd.rd_nr=$((MAX_DESTS + 1)) brd.rd_size=$((BYTES >> 10)))"; return 1; }
	done
	"$BT" fill /dev/ram0 "$BYTES" || { why="filling /dev/ram0 failed"; return 1; }
	MSRC[brd]=/dev/ram0
	MDIRECT[brd]=1
	MDSTS[brd]=""
	for i in $(seq 1 $MAX_DESTS); do MDSTS[brd]+=" /dev/ram$i"; done
	# the destripe reads the destinations' ram disks and writes one more
	[ "$want_destripe" = 1 ] || return 0
	i=$((MAX_DESTS + 1))
	n=$(blockdev_bytes /dev/ram$i)
	if [ "$n" -lt "$BYTES" ]; then
		MGWHY[brd]="/dev/ram$i has $n bytes, needs $BYTES (boot with brd.rd_nr=$((i + 1)) brd.rd_size=$((BYTES >> 10)))"
		return 0
	fi
	fill_members brd ${MDSTS[brd]} && MGDST[brd]=/dev/ram$i
	return 0
}
# null_blk with no memory behind it (configfs, blk-mq, completions inline):
# reads and writes cost the device nothing and keep no data, so what is left
# is each mover's own cost: the copies it makes, its system calls. Runs on
# it are timed and counted, not verified.
setup_nullb() {
	local cfs=/sys/kernel/config/nullb i d n
	[ -d $cfs ] || mount -t configfs none /sys/kernel/config 2>/dev/null
	[ -d $cfs ] || { why="no null_blk configfs at $cfs"; return 1; }
	MDSTS[nullb]=""
	for i in $(seq 0 $((MAX_DESTS + want_destripe))); do
		d=$cfs/iou-bench$i
		# max_sectors as a real disk's default max_sectors_kb (1280): null_blk's
		# own (255 sectors) splits anything over 127 KiB, and a split under
		# REQ_NOWAIT ends in -EAGAIN (block/blk-merge.c), which io_uring
		# retries from io-wq. Its 128 segments still split requests over
		# 512 KiB of scattered 4 KiB pages (daemon/files_limits.c)
		mkdir -p "$d" && echo $((BYTES >> 20)) > "$d/size" && echo 4096 > "$d/blocksize" &&
			echo 2560 > "$d/max_sectors" &&
			echo 0 > "$d/memory_backed" && echo 0 > "$d/irqmode" &&
			echo 2 > "$d/queue_mode" && echo 1 > "$d/power" ||
			{ why="configuring null_blk $d failed"; return 1; }
		# 6.12 names a configfs device after its directory (older: nullbINDEX)
		n=/dev/nullb$(cat "$d/index")
		d=/dev/${d##*/}
		for _ in $(seq 50); do [ -b "$d" ] || [ -b "$n" ] && break; sleep 0.1; done
		[ -b "$d" ] || d=$n
		[ -b "$d" ] || { why="no /dev/iou-bench$i or $n after configuring null_blk"; return 1; }
		if [ "$i" = 0 ]; then MSRC[nullb]=$d
		elif [ "$i" -le $MAX_DESTS ]; then MDSTS[nullb]+=" $d"
		else MGDST[nullb]=$d; fi
	done
	MDIRECT[nullb]=1
	# no data to fill: null_blk keeps none
	MMEMBERS[nullb]=${MDSTS[nullb]}
}
setup_virtio() {
	local b serial="" dev="" i
	for b in /sys/block/vd*; do
		serial=$(cat "$b/serial" 2>/dev/null)	# no newline at its end: not `read`
		[ "$serial" = iou-scratch ] && dev=/dev/${b##*/}
	done
	[ -n "$dev" ] || { why="no virtio scratch disk (serial iou-scratch; VM_SCRATCH_MB)"; return 1; }
	"$BT" gpt "$dev" $((MAX_DESTS + 1 + want_destripe)) "$BYTES" || { why="partitioning $dev failed"; return 1; }
	for i in $(seq 1 $((MAX_DESTS + 1 + want_destripe))); do
		for _ in $(seq 50); do [ -b "$dev$i" ] && break; sleep 0.1; done
		[ -b "$dev$i" ] || { why="no $dev$i after partitioning"; return 1; }
	done
	"$BT" fill "${dev}1" "$BYTES" || { why="filling ${dev}1 failed"; return 1; }
	MSRC[virtio]=${dev}1
	MDIRECT[virtio]=1
	MDSTS[virtio]=""
	for i in $(seq 2 $((MAX_DESTS + 1))); do MDSTS[virtio]+=" $dev$i"; done
	[ "$want_destripe" = 1 ] && fill_members virtio ${MDSTS[virtio]} &&
		MGDST[virtio]=$dev$((MAX_DESTS + 2))
	return 0
}

# ---- configurations ----------------------------------------------------------
# A configuration: tool|engine|transform|medium|bs|qd (engine and qd "-" where
# they do not apply, bs 0 for cp)
configs=()
declare -A SKIP=()	# set, if empty: set -u
has_tool() { [[ " $BENCH_TOOLS " == *" $1 "* ]]; }
ndests() { case "$1" in mirror*) echo 2 ;; stripe*) echo 4 ;; *) echo 1 ;; esac; }
# the destripe's sources: its members
nsrcs() { case "$1" in destripe*) echo $MAX_DESTS ;; *) echo 1 ;; esac; }

# engine_config FILE ENGINE TRANSFORM MEDIUM BS QD: an iou-offloadd
# configuration running one pipeline once
engine_config() {
	local f=$1 engine=$2 tf=$3 medium=$4 bs=$5 qd=$6 d
	local -a srcs=(${MSRC[$medium]}) dsts=(${MDSTS[$medium]})
	[[ $tf == destripe* ]] && srcs=(${MMEMBERS[$medium]}) dsts=(${MGDST[$medium]})
	{
		daemon_section "$WORK/state" "$engine" "$qd" "$bs"
		echo "direct = $([ "${MDIRECT[$medium]}" = 1 ] && echo yes || echo no)"
		# one checkpoint at the end: the baselines do not flush either
		echo "checkpoint_interval = $((BYTES >> 20))M"
		[[ $tf == *stripe* ]] && echo "stripe_unit = $(stripe_unit "$tf" "$bs")"
		echo
		echo "[pipeline bench]"
		transform_keys "$tf"
		for d in "${srcs[@]:0:$(nsrcs "$tf")}"; do echo "source = $d"; done
		echo "length = $LEN"
		for d in "${dsts[@]:0:$(ndests "$tf")}"; do echo "destination = $d"; done
	} > "$f"
}

# engine_check ENGINE: 0 if iou-offloadd is there and takes this engine; else
# sets $why. The hook for the engines another component builds: nothing here
# knows what an engine does, only how to start the daemon once.
engine_check() {
	local engine=$1 f=$WORK/conf/check-$1.conf out
	[ -n "$daemon" ] || { why="iou-offloadd is not installed"; return 1; }
	if [ "$mode" = host ] && [ "$engine" != uring ]; then
		why="no BPF on the host kernel"; return 1
	fi
	engine_config "$f" "$engine" copy "${media[0]}" 1048576 8
	out=$("$daemon" --check-config="$f" 2>&1) || { why="iou-offloadd rejects engine = $engine: $(head -1 <<<"$out")"; return 1; }
	return 0
}

media=()
for m in $BENCH_MEDIA; do
	why=""
	if "setup_$m"; then
		media+=("$m")
		echo "# medium $m: source ${MSRC[$m]}, destinations${MDSTS[$m]}"
	else
		echo "# medium $m: not measured: $why"
		SKIP["medium $m"]=$why
	fi
done

bss=()
for b in $BENCH_BS; do bss+=("$(size_bytes "$b")"); done
if has_tool memcpy; then
	for bs in "${bss[@]}"; do
		configs+=("memcpy|-|copy|memory|$bs|-")
		configs+=("memcpy-vec|-|copy|memory|$bs|-")
	done
fi
for m in "${media[@]}"; do
	for bs in "${bss[@]}"; do
		has_tool dd && configs+=("dd|-|copy|$m|$bs|-")
		if has_tool fio; then
			for qd in $BENCH_QD; do configs+=("fio|-|copy|$m|$bs|$qd"); done
		fi
	done
	has_tool cp && configs+=("cp|-|copy|$m|0|-")
done
engine_skips=()
if has_tool engines && [ ${#media[@]} -gt 0 ]; then
	for e in $BENCH_ENGINES; do
		why=""
		if ! engine_check "$e"; then
			engine_skips+=("$e")
			SKIP["iou-offloadd engine $e"]=$why
			continue
		fi
		for tf in $BENCH_TRANSFORMS; do
			if [[ $tf == *-sum ]] && [ "$e" = loop ]; then
				SKIP["iou-offloadd $e $tf"]="checksum = crc32c is not on the loop engine yet"
				continue
			fi
			for m in "${media[@]}"; do
				if [[ $tf == destripe* ]] && [ -z "${MGDST[$m]:-}" ]; then
					SKIP["iou-offloadd $e $tf $m"]=${MGWHY[$m]:-"no destination for the destripe"}
					continue
				fi
				for bs in "${bss[@]}"; do
					for qd in $BENCH_ENGINE_QD; do configs+=("iou-offloadd|$e|$tf|$m|$bs|$qd"); done
				done
			done
		done
	done
fi

label() {
	local tool engine tf medium bs qd s
	IFS='|' read -r tool engine tf medium bs qd <<<"$1"
	s=$tool
	[ "$engine" != - ] && s="iou-offloadd $engine"
	s+=" $tf $medium"
	[ "$bs" != 0 ] && s+=" bs=$(size_name "$bs")"
	[ "$qd" != - ] && s+=" qd=$qd"
	echo "$s"
}

# ---- one run --------------------------------------------------------------------
# prepare_and_command CONFIG: clears the destinations, sets CMD
prepare_and_command() {
	local tool engine tf medium bs qd src n d
	IFS='|' read -r tool engine tf medium bs qd <<<"$1"
	local -a dsts=()
	CMD=()
	if [ "$medium" != memory ]; then
		dsts=(${MDSTS[$medium]})
		src=${MSRC[$medium]}
		# files start empty every run; block devices are overwritten in place
		[ "$medium" = tmpfs ] && rm -f "${dsts[@]}" ${MGDST[$medium]:-}
	fi
	case "$tool" in
	memcpy) CMD=("$BT" memcpy --block "$bs" --total "$LEN") ;;
	# glibc's vector loop instead of its rep movsb (which it picks for
	# 8 KiB .. 512 KiB on this CPU, and which emulators run far slower)
	memcpy-vec) CMD=("${NO_MOVSB[@]}" "$BT" memcpy --block "$bs" --total "$LEN") ;;
	dd)
		CMD=(dd if="$src" of="${dsts[0]}" bs="$bs" count=$((LEN / bs)) status=none)
		[ "${MDIRECT[$medium]}" = 1 ] && CMD+=(iflag=direct oflag=direct conv=fsync,notrunc) ;;
	cp) CMD=(cp "$src" "${dsts[0]}") ;;
	fio)
		# fio at its leanest: threads, no per-I/O clock reads or buffer scrambling
		CMD=(fio --ioengine=io_uring --fixedbufs=1 --bs="$bs" --iodepth="$qd" --size="$LEN"
			--direct="${MDIRECT[$medium]}" --fallocate=none --invalidate=0 --unlink=0
			--thread --gtod_reduce=1 --scramble_buffers=0
			--group_reporting --output-format=terse
			--name=read --filename="$src" --rw=read
			--name=write --filename="${dsts[0]}" --rw=write) ;;
	iou-offloadd)
		rm -rf "$WORK/state"/*
		engine_config "$WORK/conf/run.conf" "$engine" "$tf" "$medium" "$bs" "$qd"
		CMD=("$daemon" --config="$WORK/conf/run.conf" --once) ;;
	esac
	# every mover on the same copy routine (BENCH_MOVSB above); not the
	# memcpy row, which shows glibc's own choice
	[ "$BENCH_MOVSB" = off ] && [ "$tool" != memcpy ] && [ "$tool" != memcpy-vec ] &&
		CMD=("${NO_MOVSB[@]}" "${CMD[@]}")
	# block devices start cold: their page cache (what cp and the checks
	# read through) is written back and dropped, with BLKFLSBUF on each
	# device of the medium. Not drop_caches: that also evicts the movers'
	# own binaries and libraries, which each run then reads back from the
	# emulated root disk, inside its timed run (it put 0.3-1 s into every
	# one-block start-up run on brd). Not tmpfs or memory: their data is
	# memory either way.
	if [ "$mode" = guest ] && [ "$medium" != tmpfs ] && [ "$medium" != memory ]; then
		sync
		blockdev --flushbufs "${MSRC[$medium]}" ${MDSTS[$medium]} ${MGDST[$medium]:-}
	fi
}

# verify CONFIG: the destinations hold the source (sets $verdict)
verify() {
	local tool engine tf medium bs qd src d n
	IFS='|' read -r tool engine tf medium bs qd <<<"$1"
	case "$tool" in
	memcpy*) verdict="copy verified"; return 0 ;;	# benchtool memcpy compares itself
	fio) verdict="ran (fio writes its own data)"; return 0 ;;
	esac
	[ "$medium" = nullb ] && { verdict="ran (null_blk keeps no data)"; return 0; }
	if [[ $tf == *stripe* ]]; then verdict="ran (stripe layout checked by the daemon's own tests)"; return 0; fi
	local -a dsts=(${MDSTS[$medium]})
	n=$(ndests "$tf")
	src=${MSRC[$medium]}
	for d in "${dsts[@]:0:$n}"; do
		if ! cmp -s -n "$BYTES" "$src" "$d"; then
			verdict="$d differs from $src"
			return 1
		fi
	done
	verdict="$n destination(s) verified"
}


# daemon_counts LOG: the daemon's own exact counts of the run that just ended,
# as key=value words: from its status file (runtime_dir/status: enters, cqes,
# bpf_ops, user_copied and bpf_bytes, the bytes memcpy'd in userspace and by
# uring_bpf_memcpy()), else from its finishing journal line in LOG ("finished,
# N bytes, E engine, N io_uring_enter calls, N CQEs, N IORING_OP_BPF
# completions, X bytes memcpy'd per byte moved": a ratio rounded to 0.01)
daemon_counts() {
	local st=$WORK/state/status line k v out=""
	if [ -f "$st" ] && grep -q '^state=finished$' "$st"; then
		for k in enters cqes bpf_ops user_copied bpf_bytes; do
			v=$(sed -n "s/^$k=\([0-9]*\)\$/\1/p" "$st" | head -1)
			out+=" d_$k=${v:--1}"
		done
		echo "$out"
		return
	fi
	line=$(grep -o 'finished, [0-9]* bytes[^,]*, [a-z]* engine, .*per byte moved' "$1" | tail -1)
	if [ -n "$line" ]; then
		sed -E 's/finished, ([0-9]+) bytes[^,]*, [a-z]+ engine, ([0-9]+) io_uring_enter calls, ([0-9]+) CQEs, ([0-9]+) IORING_OP_BPF completions, ([0-9.]+) bytes.*/d_enters=\2 d_cqes=\3 d_bpf_ops=\4 d_copied_per_byte=\5/' <<<"$line"
		return
	fi
	echo "d_enters=-1"
}

# record CONFIG RUN LINE [KIND]: one JSON line of raw figures. KIND: timed
# (default), startup (the same command moving one block: its fixed cost), or
# counting (host: the run under strace that counts system calls). LINE:
# benchtool run's words, plus daemon_counts' for the daemon's runs.
record() {
	local tool engine tf medium bs qd blocks=0 extra="" k v
	IFS='|' read -r tool engine tf medium bs qd <<<"$1"
	[ "$bs" -gt 0 ] && blocks=$(( (LEN + bs - 1) / bs ))
	if [ "$tool" = iou-offloadd ]; then
		for k in enters cqes bpf_ops user_copied bpf_bytes copied_per_byte; do
			v=$(kv "d_$k" "$3")
			[ "$v" != -1 ] && extra+=",\"daemon_$k\":$v"
		done
	fi
	printf '{"system":"%s","accel":"%s","tool":"%s","engine":"%s","transform":"%s","medium":"%s","bs":%s,"qd":%s,"run":%s,"bytes":%s,"blocks":%s,"wall_s":%s,"user_s":%s,"sys_s":%s,"rc":%s,"io_uring_enter":%s,"syscalls":%s,"punts":%s,"nvcsw":%s,"nivcsw":%s,"kind":"%s"%s}\n' \
		"$system" "$accel" "$tool" "$([ "$engine" = - ] && echo "" || echo "$engine")" "$tf" "$medium" "$bs" \
		"$([ "$qd" = - ] && echo 0 || echo "$qd")" "$2" "$LEN" "$blocks" \
		"$(kv wall "$3")" "$(kv user "$3")" "$(kv sys "$3")" "$(kv rc "$3")" \
		"$(kv io_uring_enter "$3")" "$(kv syscalls "$3")" "$(kv punts "$3")" \
		"$(kv nvcsw "$3")" "$(kv nivcsw "$3")" "${4:-timed}" "$extra" >> "$RAW"
}

# host: io_uring_enter and syscall counts from one run under strace -f -c
strace_count() {
	local f=$WORK/strace.txt calls total
	command -v strace >/dev/null || { echo "io_uring_enter=-1 syscalls=-1"; return; }
	strace -f -c -o "$f" "${CMD[@]}" >/dev/null 2>&1
	calls=$(awk '$NF == "io_uring_enter" { print $4 }' "$f")
	total=$(awk '$NF == "total" { print $4 }' "$f")
	echo "rc=0 wall=0 user=0 sys=0 io_uring_enter=${calls:-0} syscalls=${total:--1} punts=-1 nvcsw=-1 nivcsw=-1"
}

# io-wq punts are counted in the task that queues the work (the daemon's
# pipeline thread, or an io-wq worker queueing a linked request), so the
# counter must follow the threads CMD creates: on tmpfs, which has no
# FMODE_NOWAIT on 6.12, every read and write of a copy is punted from the
# pipeline thread (a child of the exec'd process), so a 16-block copy there
# must count at least 32. Prints "punts=N blocks=16" (guest only).
punt_check() {
	local d=$WORK/punt-check
	mkdir -p "$d/state" && mount -t tmpfs -o size=48m iou-punt "$d" && mkdir -p "$d/state" || return 1
	"$BT" fill "$d/src" $((16 << 20)) || { umount "$d"; return 1; }
	{
		daemon_section "$d/state" uring 8 1048576
		echo "[pipeline check]"
		echo "transform = copy"
		echo "source = $d/src"
		echo "destination = $d/dst"
	} > "$WORK/conf/punt.conf"
	line=$("$BT" run --count --log "$WORK/logs/punt.log" -- "$daemon" --config="$WORK/conf/punt.conf" --once)
	umount "$d"
	echo "punts=$(kv punts "$line") rc=$(kv rc "$line") blocks=16"
}

# ---- run everything ----------------------------------------------------------------
nconf=${#configs[@]}
extra_tests=0
[ "$mode" = guest ] && [ -n "$daemon" ] && extra_tests=$((extra_tests + 1))
[ "$mode" = host ] && [ "${HOST_DURABILITY:-1}" != 0 ] && extra_tests=$((extra_tests + 1))
plan $((nconf + ${#SKIP[@]} + extra_tests))
echo "# bench: $system, accelerator $accel, kernel $(uname -r), $(nproc) cpus," \
	"$BENCH_MB MiB per run, $BENCH_RUNS runs (median, min, max), $nconf configurations"
[ "$accel" = tcg ] && echo "# accelerator tcg: everything is emulated; compare figures as ratios within this run, and counts exactly"
declare -A FAILED=() VERDICT=()
t_start=$(date +%s)
for r in $(seq 1 "$BENCH_RUNS"); do
	echo "# round $r/$BENCH_RUNS ($(( $(date +%s) - t_start )) s)"
	for i in "${!configs[@]}"; do
		c=${configs[$i]}
		[ -n "${FAILED[$i]:-}" ] && continue
		log=$WORK/logs/$i.log
		: > "$log"
		# round 1: first the fixed cost, the same command moving one block
		IFS='|' read -r tool _ _ _ bs _ <<<"$c"
		if [ "$r" -eq 1 ] && [[ $tool != memcpy* ]] && [ "$tool" != cp ]; then
			LEN=$bs
			prepare_and_command "$c"
			# counted too: the report takes its CPU time and system calls
			# out of the timed runs' (net CPU s/GiB, net syscalls/GiB)
			line=$("$BT" run "${count_args[@]}" --log "$log" -- "${CMD[@]}" 2>>"$log")
			[ "$tool" = iou-offloadd ] && line+=" $(daemon_counts "$log")"
			record "$c" 0 "$line" startup
			LEN=$BYTES
		fi
		# memcpy is a rate: BENCH_MEMCPY_MB of it is enough (glibc's rep
		# movsb at 64K ran 8 s per 256 MiB under TCG)
		[[ $tool == memcpy* ]] && LEN=$MEMCPY_BYTES
		prepare_and_command "$c"
		if [[ $tool == memcpy* ]]; then	# times its copy loop itself
			line=$("${CMD[@]}" 2>>"$log")
		else
			line=$("$BT" run "${count_args[@]}" --log "$log" -- "${CMD[@]}" 2>>"$log")
			[ "$tool" = iou-offloadd ] && line+=" $(daemon_counts "$log")"
		fi
		rc=$(kv rc "$line")
		record "$c" "$r" "$line"
		LEN=$BYTES
		if [ "$rc" != 0 ]; then
			FAILED[$i]="exit status $rc in round $r: $(tail -3 "$log" | tr '\n' ' ')"
			continue
		fi
		if [ "$r" -eq "$BENCH_RUNS" ]; then
			verdict=""
			verify "$c" || FAILED[$i]=$verdict
			VERDICT[$i]=$verdict
			if [ "$mode" = host ] && [[ $tool != memcpy* ]]; then
				prepare_and_command "$c"
				record "$c" 0 "$(strace_count)" counting
			fi
		fi
	done
done
echo "# all rounds done in $(( $(date +%s) - t_start )) s"

# ---- TAP and the summary -------------------------------------------------------------
python3 "$here/report.py" summarize --raw "$RAW" --md "$OUT/table.md" --json "$OUT/summary.json" \
	--tap-lines "$OUT/tap-lines.txt" >/dev/null 2>"$WORK/report.err" || cat "$WORK/report.err" | sed 's/^/# report: /'
for i in "${!configs[@]}"; do
	c=${configs[$i]}
	desc=$(label "$c")
	fig=$(awk -F'\t' -v k="$c" '$1 == k { print $2 }' "$OUT/tap-lines.txt" 2>/dev/null)
	if [ -n "${FAILED[$i]:-}" ]; then
		nok "$desc: ran and verified (${FAILED[$i]})"
		sed 's/^/#   /' "$WORK/logs/$i.log" | tail -10
	else
		ok "$desc: ${fig:-no figures}; ${VERDICT[$i]:-}"
	fi
done
for k in "${!SKIP[@]}"; do
	skip "$k" "${SKIP[$k]}"
done
if [ "$mode" = guest ] && [ -n "$daemon" ]; then
	# the punt counter sees the threads the command creates (see punt_check)
	pc=$(punt_check 2>&1)
	n=$(kv punts "$pc")
	if [ "$(kv rc "$pc")" = 0 ] && [ "$n" -ge 32 ] 2>/dev/null; then
		ok "io-wq punt counter follows the daemon's threads: $n punts for a 16-block tmpfs copy"
	else
		nok "io-wq punt counter follows the daemon's threads: $pc"
	fi
	echo "{\"system\":\"$system\",\"kind\":\"punt_check\",\"result\":\"$pc\"}" >> "$OUT/checks.jsonl"
fi
if [ "$mode" = host ] && [ "${HOST_DURABILITY:-1}" != 0 ]; then
	# what the daemon's default config costs against dd conv=fdatasync and
	# cp + sync, and against one checkpoint at the end (make bench-durability)
	DUR_JSON=$OUT/durability.json DAEMON=$daemon bash "$here/durability.sh" > "$OUT/durability.tap" 2>&1
	if grep -q '^not ok' "$OUT/durability.tap" || [ ! -s "$OUT/durability.json" ]; then
		nok "host durability (durability.sh): $(grep -m1 '^not ok' "$OUT/durability.tap")"
	else
		ok "host durability (durability.sh): $(grep -c '^ok' "$OUT/durability.tap") copies verified"
	fi
	grep '^# ' "$OUT/durability.tap"
fi
[ -s "$OUT/table.md" ] && sed 's/^/# /' "$OUT/table.md"
exit 0
