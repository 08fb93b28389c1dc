#!/bin/bash
# Guest suite reset: a hard reset of the whole guest in the middle of a
# copy, then a reboot and a restart that must end byte-identical. Driven by
# the host (tests/vm/reset-test.sh), which boots the guest twice on one
# scratch disk (serial iou-scratch) that outlives both boots:
#
#   boot 1 (iou.reset=sysrq|kill on the command line, blank scratch disk):
#     make an ext4 on it with the sources and the daemon's state dir, start
#     iou-offloadd under systemd, wait until the pipelines are a random part
#     of the way through, print their progress, then reset the guest:
#     `echo b > /proc/sysrq-trigger` (no sync, no unmount), or print
#     IOU-RESET-NOW on the console for the host to SIGKILL QEMU.
#   boot 2 (the disk holds the phase file): mount it (the ext4 journal is
#     replayed), restart the daemon, wait for every pipeline to finish and
#     compare each destination with its source. iou.reset_done=a:N,b:N on
#     the command line (the checkpoints boot 1 saw durable) must not be
#     lost; the bytes re-copied are those on disk past the resume point.
#
# Pipelines: a buffered copy, and a stripe over two destinations with
# O_DIRECT, both on the bpf engine.
#
# Devices with integrity = crc32c (issue 32), served by a second daemon
# (its own state and runtime dirs on the same disk) that boot 1 starts
# first: a linear and a mirror ublk device over member files, each with
# 4 MiB written and flushed, then fio writing at random past it until the
# reset. Boot 2 restarts that daemon: the regions dirty in its sums file
# are summed anew (after the mirror's legs are made to agree there), so
# every block reads back with no false EIO, the flushed 4 MiB are intact,
# the legs agree, and fio verify passes on the recovered devices.
set -u
cd "$(dirname "$0")" && . ./common.sh

MiB=1048576
M=/srv/iou-offload/reset
read -r cmdline < /proc/cmdline
how="" done_at=""
for arg in $cmdline; do
	case "$arg" in
	iou.reset=*) how=${arg#iou.reset=} ;;
	iou.reset_done=*) done_at=${arg#iou.reset_done=} ;;
	esac
done
dev=""
for s in /sys/block/vd*/serial; do
	[ "$(cat "$s" 2>/dev/null)" = iou-scratch ] && dev=/dev/$(basename "$(dirname "$s")")
done
if [ -z "$dev" ]; then
	echo "1..0 # SKIP no scratch disk (serial iou-scratch): run tests/vm/reset-test.sh"
	exit 0
fi
mkdir -p "$M"
STATUS_R=$M/run/status

# ---- the integrity devices' daemon ----
STATUS=$M/drun/status	# dst() reads it
DEVS="rlin rmir"
dev_conf() {	# the members, the pattern flushed to each device, the config
	local m
	for m in l0 l1 m0 m1; do truncate -s $((16 * MiB)) "$M/$m"; done
	head -c $((4 * MiB)) /dev/urandom > "$M/pattern"
	mkdir -p "$M/dstate" "$M/drun"
	sed 's/^[[:space:]]*//' > "$M/dev.conf" <<-EOF
		[daemon]
		state_dir = $M/dstate
		runtime_dir = $M/drun
		[device rlin]
		target = linear
		engine = bpf
		integrity = crc32c
		queue_depth = 16
		backing = $M/l0
		backing = $M/l1
		[device rmir]
		target = mirror
		engine = bpf
		integrity = crc32c
		queue_depth = 16
		backing = $M/m0
		backing = $M/m1
	EOF
}
DPID=""
devs_serve() {
	local d
	for d in $DEVS; do
		[ -n "$(dst $d path)" ] && [ -b "$(dst $d path)" ] && [ "$(dst $d state)" = running ] || return 1
	done
}
devs_written() {	# BYTES: each device has had at least this much written
	local d
	for d in $DEVS; do [ "$(dst $d bytes_written)" -ge "$1" ] 2>/dev/null || return 1; done
}
dev_daemon() {	# start the devices' daemon; wait until both serve
	local i
	"$BIN" -c "$M/dev.conf" >> "$ART/devices-daemon.log" 2>&1 &
	DPID=$!
	for i in $(seq 300); do devs_serve && return 0; sleep 0.2; done
	return 1
}
map_dirty() {	# DEVICE REGIONS [disk]: regions dirty in its sums file (the map: page 1, a
	# byte each); disk: the block as the disk holds it, read from the disk
	# itself (a direct read of the file would write its dirty pages first)
	local f=$M/dstate/device-$1.integrity blk
	if [ -n "${3:-}" ]; then
		blk=$(debugfs -R "bmap /dstate/device-$1.integrity 1" "$dev" 2>/dev/null | tail -1)
		dd if="$dev" bs=4096 skip="${blk:-0}" count=1 iflag=direct status=none
	else
		dd if="$f" bs=4096 skip=1 count=1 status=none
	fi | python3 -c 'import sys; print(sum(sys.stdin.buffer.read(int(sys.argv[1]))))' "$2" 2>/dev/null
}
dev_start_writing() {	# boot 1: 4 MiB flushed on each device, then fio past it until the reset
	local d i
	check "the integrity devices' daemon serves rlin and rmir" dev_daemon
	for d in $DEVS; do
		check "$d: 4 MiB written and flushed (oflag=direct conv=fsync)" \
			dd if="$M/pattern" of="$(dst $d path)" bs=1M oflag=direct conv=fsync status=none
	done
	# a region is cleared at a flush once it has been quiet 5 s, and that
	# clean mark reaches the disk with the next flush's sync: after both,
	# the map on disk is clean, so only the writes to come can make a region
	# dirty there, and only if the daemon marks them durably first
	sleep 5.5
	for d in $DEVS; do sync "$(dst $d path)"; sync "$(dst $d path)"; done
	check "the dirty maps are clean before fio writes (a new device starts with every region dirty)" \
		eval '[ "$(map_dirty rlin 32)" = 0 ] && [ "$(map_dirty rmir 16)" = 0 ]'
	# the kernel's own writeback off from here, so the marks found on the
	# disk below are the daemon's doing, not the flusher's
	echo 0 > /proc/sys/vm/dirty_writeback_centisecs
	echo 360000 > /proc/sys/vm/dirty_expire_centisecs
	echo $((1 << 30)) > /proc/sys/vm/dirty_background_bytes
	# past the flushed 4 MiB to the device's end (linear 32 MiB, mirror 16 MiB)
	for d in $DEVS; do
		fio --name=reset-$d --filename="$(dst $d path)" --ioengine=io_uring --direct=1 \
			--rw=randwrite --bsrange=4k-128k --iodepth=8 --offset=4M \
			--size=$(( $(blockdev --getsize64 "$(dst $d path)") - 4 * MiB )) --rate=2m \
			--time_based --runtime=600 > /dev/null 2>&1 &
	done
	for i in $(seq 150); do devs_written $((5 * MiB)) && break; sleep 0.2; done
	check "fio is writing to both devices (1 MiB past the flushed 4 MiB each: rlin $(dst rlin bytes_written), rmir $(dst rmir bytes_written) bytes)" \
		devs_written $((5 * MiB))
	check "both fio writers are still running" eval '[ "$(jobs -rp | wc -l)" -ge 2 ]'
	# what boot 2 relies on, read past the page cache: no flush has come
	# since the maps were clean, so only the daemon's own marks put it there
	local dl dm
	dl=$(map_dirty rlin 32 disk) dm=$(map_dirty rmir 16 disk)
	check "the regions fio is writing are dirty in the maps on disk (rlin $dl, rmir $dm), marked durably before their first writes" \
		eval '[ "${dl:-0}" -gt 0 ] && [ "${dm:-0}" -gt 0 ]'
}
dev_recover() {	# boot 2: restart the devices' daemon and check what it serves
	local d path
	rm -rf "$M/drun"	# boot 1's status file: stale
	check "the integrity devices come back after the reset" dev_daemon
	note "regions summed anew at the start: rlin $(dst rlin recomputed), rmir $(dst rmir recomputed)"
	check "the regions being written at the reset were dirty in the sums file and summed anew" eval \
		'[ "$(dst rlin recomputed)" -gt 0 ] && [ "$(dst rmir recomputed)" -gt 0 ]'
	# fio wrote past the first 4 MiB only: those four regions were clean
	check "only regions fio wrote were summed anew (rlin at most 28 of 32, rmir at most 12 of 16)" eval \
		'[ "$(dst rlin recomputed)" -le 28 ] && [ "$(dst rmir recomputed)" -le 12 ]'
	for d in $DEVS; do
		path=$(dst $d path)
		check "$d: every block reads after the reset (no false EIO)" \
			dd if="$path" of=/dev/null bs=1M iflag=direct status=none
		check "$d: the 4 MiB flushed before the reset are intact" \
			cmp -s "$M/pattern" <(dd if="$path" bs=1M count=4 iflag=direct status=none)
		check "$d: no read disagreed with its sum, no request failed" eval \
			'[ "$(dst $d mismatches)" = 0 ] && [ "$(dst $d errors)" = 0 ]'
		check "$d: fio verify=crc32c passes on the recovered device" \
			fio --name=after-$d --filename="$path" --ioengine=io_uring --direct=1 --rw=randwrite \
			--bsrange=4k-64k --iodepth=8 --offset=4M --size=8M --verify=crc32c --verify_fatal=1 \
			--do_verify=1 --output="$ART/fio-after-$d.log"
	done
	kill -TERM "$DPID"
	wait "$DPID"
	check "the devices' daemon stops cleanly (exit 0)" [ $? = 0 ]
	check "the mirror's legs are identical after the reset and the recovery" cmp -s "$M/m0" "$M/m1"
}

if ! blkid "$dev" >/dev/null 2>&1; then
	# ---- boot 1: set up, copy, reset mid-copy ----
	case "$how" in
	sysrq|kill) ;;
	*) nok "boot 1 knows how to reset (iou.reset=sysrq|kill, got '$how')"; plan; exit 1 ;;
	esac
	check "ext4 made on the scratch disk $dev" mkfs.ext4 -q -F "$dev"
	mount "$dev" "$M" || { nok "scratch disk mounted"; plan; exit 1; }
	mkdir -p "$M/state" "$M/run"
	head -c $((128 * MiB)) /dev/urandom > "$M/src-a"
	head -c $((128 * MiB)) /dev/urandom > "$M/src-b"
	sed 's/^[[:space:]]*//' > "$M/reset.conf" <<-EOF
		[daemon]
		engine = bpf
		state_dir = $M/state
		runtime_dir = $M/run
		queue_depth = 4
		block_size = 128K
		checkpoint_interval = 4M
		[pipeline a]
		transform = copy
		source = $M/src-a
		destination = $M/dst-a
		[pipeline b]
		transform = stripe
		stripe_unit = 64K
		direct = yes
		source = $M/src-b
		destination = $M/dst-b0
		destination = $M/dst-b1
	EOF
	cp "$M/reset.conf" /etc/iou-offloadd.conf
	dev_conf
	echo "$how" > "$M/phase"
	# the sources and the config must survive the reset; what the daemon
	# writes from here on is only as durable as it makes it
	sync
	# read the sources from the (throttled) disk, not from the page cache
	echo 3 > /proc/sys/vm/drop_caches
	RANDOM=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
	# the host needs a moment to see the marker and kill QEMU, while the
	# copy goes on: aim earlier there, so the plug is pulled mid-copy
	if [ "$how" = kill ]; then pct=$((5 + RANDOM % 30)); else pct=$((10 + RANDOM % 60)); fi
	target=$((128 * MiB * pct / 100))
	dev_start_writing
	ok "reset armed: by $how once pipeline a passes ${pct}% of 128 MiB"
	plan
	# the TAP above must reach the console before the reset cuts it off
	sleep 2
	systemctl start iou-offloadd
	# poll without forks (each costs ~0.1 s under TCG): the status file's
	# pipeline= and bytes_done= lines, read by bash itself
	a=0 b=0 da=0 db=0
	for _ in $(seq 60000); do
		cur=""
		while IFS='=' read -r k v; do
			case "$k" in
			pipeline) cur=$v ;;
			bytes_done) [ "$cur" = a ] && a=$v; [ "$cur" = b ] && b=$v ;;
			bytes_durable) [ "$cur" = a ] && da=$v; [ "$cur" = b ] && db=$v ;;
			esac
		done < "$STATUS_R" 2>/dev/null
		[ "${a:-0}" -ge "$target" ] 2>/dev/null && break
		sleep 0.01
	done
	# straight to the console: the host reads it there, boot 2 reports it.
	# The status file is written every 0.5 s: the copy is further along.
	echo "IOU-RESET-DONE a:$da,b:$db" > /dev/console
	if [ "$how" = sysrq ]; then
		echo 1 > /proc/sys/kernel/sysrq
		echo b > /proc/sysrq-trigger
	else
		echo "IOU-RESET-NOW" > /dev/console
	fi
	sleep 600
	exit 1
fi

# ---- boot 2: recover, restart, verify ----
check "scratch disk mounts after the reset (journal replay)" mount "$dev" "$M"
how=$(cat "$M/phase" 2>/dev/null)
note "reset by $how; $(dmesg | grep -m1 -E 'EXT4-fs.*recovery' || echo 'no ext4 recovery message')"
# what reached the disk before the reset (the extents after journal replay)
declare -A ondisk
ondisk[a]=$(stat -c %s "$M/dst-a" 2>/dev/null || echo 0)
ondisk[b]=$(( $(stat -c %s "$M/dst-b0" 2>/dev/null || echo 0) + $(stat -c %s "$M/dst-b1" 2>/dev/null || echo 0) ))
for p in a b; do
	check "the reset came in the middle of pipeline $p (checkpoint $(ck "$M/state/$p.ckpt" done) of $((128 * MiB)) bytes, state $(ck "$M/state/$p.ckpt" state))" \
		[ "$(ck "$M/state/$p.ckpt" state)" != finished ]
	note "pipeline $p: ${ondisk[$p]} bytes on disk after the reset"
done
cp "$M/reset.conf" /etc/iou-offloadd.conf
rm -rf "$M/run"		# boot 1's status file: stale
systemctl start iou-offloadd
for p in a b; do
	if wait_state "$p" finished 900 "$STATUS_R"; then
		ok "pipeline $p finishes after the reset"
	else
		nok "pipeline $p finishes after the reset (state $(st "$STATUS_R" "$p" state): $(st "$STATUS_R" "$p" error))"
	fi
done
systemctl stop iou-offloadd
journalctl -u iou-offloadd --no-pager -o cat > "$ART/journal.txt" 2>&1
check "pipeline a: destination byte-identical" same "$M/src-a" "$M/dst-a"
# gather b's two stripes back with the uring engine (userspace copies, a
# path independent of the bpf engine under test) and compare
sed 's/^[[:space:]]*//' > "$M/join.conf" <<-EOF
	[daemon]
	engine = uring
	state_dir = $M/join-state
	runtime_dir = $M/join-run
	[pipeline join]
	transform = gather
	gather = destripe
	stripe_unit = 64K
	source = $M/dst-b0
	source = $M/dst-b1
	destination = $M/b.joined
EOF
"$BIN" -c "$M/join.conf" --once > "$ART/join.log" 2>&1
check "pipeline b: both stripes byte-identical to the source" same "$M/src-b" "$M/b.joined"
for p in a b; do
	r=$(st "$STATUS_R" "$p" bytes_resumed)
	durable=$(tr ',' '\n' <<< "$done_at" | sed -n "s/^$p://p")
	if [ -n "$durable" ]; then
		# a checkpoint the daemon had reported before the reset survives it
		check "pipeline $p: resumed at byte ${r:-?}, at or past the checkpoint reported durable before the reset ($durable)" \
			[ -n "$r" -a "${r:-0}" -ge "$durable" ]
	else
		note "pipeline $p: resumed at byte ${r:-?} (no progress from boot 1 on the command line)"
	fi
	# work done again: bytes that had reached the disk past the checkpoint
	re=$(( ${ondisk[$p]} > ${r:-0} ? ${ondisk[$p]} - ${r:-0} : 0 ))
	note "pipeline $p: resumed at byte ${r:-?}; ${ondisk[$p]} bytes were on disk: $re bytes re-copied"
	echo "recopied $p $re resumed ${r:-?} ondisk ${ondisk[$p]} durable_before ${durable:-?}" >> "$ART/recopied.txt"
	# checkpoint_interval (4M) plus one queue depth (4 x 128K) past the
	# last durable checkpoint is the daemon's bound on what a crash re-copies
	check "pipeline $p: re-copied $re bytes, within checkpoint_interval + a queue depth" \
		[ "$re" -le $((4 * MiB + 4 * 128 * 1024)) ]
done
rm -rf "$M/b.joined" "$M/join-state" "$M/join-run"
dev_recover
plan
