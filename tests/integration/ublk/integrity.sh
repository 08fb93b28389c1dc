#!/bin/bash
# Guest suite: integrity = crc32c on ublk devices (linear, stripe, mirror
# over files, zero copy, engine bpf). The sums the kernel takes of each
# 4 KiB written are in state_dir/device-NAME.integrity, durable at a flush;
# a block altered on a member behind the daemon's back fails its read with
# EIO (linear, stripe) or is read from the other leg and healed (mirror),
# and fio never sees wrong bytes; a clean stop leaves no dirty region and
# the sums survive it; kill -9 under fio verify: the dirty regions' sums are
# taken again at the take-over, no false EIO; two queues of 64 x 1M, each
# with its own sums; a second queue that cannot be set up fails the start
# cleanly (fail_queue.so), and SIGTERM still ends the daemon. Prints TAP. Installed as
# usr/lib/iou-offload/tests/<NN>-ublk-integrity/run (NN: tests/vm/suites.list).
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$here/../lib; [ -f "$lib/tap.sh" ] || lib=$here/../../lib
. "$lib/tap.sh"
. "$lib/daemon.sh"

[ -e /dev/ublk-control ] || skip_all "no /dev/ublk-control (kernel without CONFIG_BLK_DEV_UBLK)"
command -v fio >/dev/null || skip_all "fio is not installed"

T=${IOU_TEST_DIR:-/srv/iou-offload/test}/ublk-integrity
rm -rf "$T"
mkdir -p "$T"
MiB=$((1 << 20))
STATE=/var/lib/iou-offload
for m in 0 1; do truncate -s $((8 * MiB)) "$T/l$m"; done
for m in 0 1 2; do truncate -s $((8 * MiB)) "$T/s$m"; done
for m in 0 1; do truncate -s $((16 * MiB)) "$T/m$m"; done
for m in 0 1; do truncate -s $((8 * MiB)) "$T/p$m"; done
for m in 0 1; do truncate -s $((4 * MiB)) "$T/lc$m" "$T/mc$m"; done
rm -f "$STATE"/device-ilin.* "$STATE"/device-istr.* "$STATE"/device-imir.* "$STATE"/device-pmir.*
rm -f "$STATE"/device-ilinc.* "$STATE"/device-imirc.* "$STATE"/imir.scrub "$STATE"/pmir.scrub

DEVICES="[device ilin]
	target = linear
	engine = bpf
	integrity = crc32c
	queue_depth = 16
	backing = $T/l0
	backing = $T/l1
	[device istr]
	target = stripe
	engine = bpf
	integrity = crc32c
	queue_depth = 16
	stripe_unit = 64K
	backing = $T/s0
	backing = $T/s1
	backing = $T/s2
	[device imir]
	target = mirror
	engine = bpf
	integrity = crc32c
	read_policy = primary
	queue_depth = 16
	scrub_rate = 4M
	backing = $T/m0
	backing = $T/m1
	[device pmir]
	target = mirror
	engine = bpf
	backing = $T/p0
	backing = $T/p1
	[device ilinc]
	target = linear
	engine = uring
	data_path = copy
	integrity = crc32c
	queue_depth = 16
	backing = $T/lc0
	backing = $T/lc1
	[device imirc]
	target = mirror
	engine = uring
	data_path = copy
	integrity = crc32c
	read_policy = primary
	queue_depth = 16
	backing = $T/mc0
	backing = $T/mc1"
DROPIN=/run/systemd/system/iou-offloadd.service.d/ublk-integrity-test.conf
mkdir -p "${DROPIN%/*}"
printf '[Service]\nCapabilityBoundingSet=CAP_SYS_ADMIN\n' > "$DROPIN"
systemctl daemon-reload
sysconf "$DEVICES"
iou-offloadd --check-config /etc/iou-offloadd.conf > "$ART/integrity-check-config.txt" 2>&1
if ! systemctl start iou-offloadd; then
	nok "systemctl start iou-offloadd with the integrity devices"
	journalctl -u iou-offloadd --no-pager | tail -30 | sed 's/^/#   /'
	rm -f "$DROPIN"; systemctl daemon-reload
	plan; summary; exit 1
fi
ok "systemctl start iou-offloadd with the integrity devices"
for i in $(seq 50); do [ -n "$(dst imir path)" ] && break; sleep 0.2; done
LIN=$(dst ilin path) STR=$(dst istr path) MIR=$(dst imir path)
note "ilin=$LIN istr=$STR imir=$MIR"
check "the devices run zero copy on engine bpf with integrity crc32c" eval \
	'(for d in ilin istr imir; do [ "$(dst $d data_path)" = zero-copy ] && [ "$(dst $d engine)" = bpf ] &&
	  [ "$(dst $d integrity)" = crc32c ] || exit 1; done)'
check "integrity devices have 4 KiB logical blocks (a sum per block, no request covers part of one)" eval \
	'(for d in "$LIN" "$STR" "$MIR"; do [ "$(blockdev --getss "$d")" = 4096 ] || exit 1; done)'
# --check-config names the metadata file and its size: the file has it
want=$(sed -n 's/.*device-imir.integrity, \([0-9]*\) bytes.*/\1/p' "$ART/integrity-check-config.txt")
check "the metadata file has the size --check-config gives (${want:-?} bytes)" eval \
	'[ -n "$want" ] && [ "$(stat -c %s "$STATE/device-imir.integrity")" = "$want" ]'
check "a new integrity device takes every region's sums from its members at the first start (16 of 1 MiB)" eval \
	'[ "$(dst ilin recomputed)" = 16 ] && [ "$(dst imir recomputed)" = 16 ] && [ "$(dst istr recomputed)" = 24 ]'
# the mirror's second leg is resynced from the first before it is read
for i in $(seq 150); do [ "$(dst imir state)" = running ] && break; sleep 0.2; done
check "the mirror's resync is done" [ "$(dst imir state)" = running ]

fio_case() {	# DEV WHAT FIO-ARGS...: fio verify=crc32c passes, no I/O error
	local dev=$1 what=$2; shift 2
	local log=$ART/fio-${dev##*/}-$what.log
	if fio --name="$what" --filename="$dev" --ioengine=io_uring --direct=1 \
		--verify=crc32c --verify_fatal=1 "$@" > "$log" 2>&1 &&
	   grep -q "err= 0" "$log" && ! grep -q "verify: bad" "$log"; then
		ok "fio verify=crc32c on $dev ($what: $*)"
	else
		nok "fio verify=crc32c on $dev ($what: $*)"
		tail -15 "$log" | sed 's/^/#   /'
	fi
}
for dev in "$LIN" "$STR" "$MIR"; do
	fio_case "$dev" seqwrite --do_verify=1 --rw=write --bs=1M --iodepth=4 --size=8M
	fio_case "$dev" randwrite-4k --do_verify=1 --rw=randwrite --bs=4k --iodepth=32 --size=2M
	fio_case "$dev" randrw-mixed --do_verify=1 --rw=randrw --bsrange=4k-512k --iodepth=8 --size=8M
done
# sequential reads and writes from 0 (fio's rw = rw keeps an offset per
# direction): the reads meet the blocks the writes are writing, or have
# just written (make bench-ublk's 1m-qd8 found the second case failing)
for dev in "$LIN" "$STR" "$MIR"; do
	log=$ART/fio-${dev##*/}-race.log
	if fio --name=race --filename="$dev" --ioengine=io_uring --direct=1 --rw=rw --bs=1M \
		--iodepth=8 --size=8M --time_based --runtime=4 > "$log" 2>&1 && grep -q "err= 0" "$log"; then
		ok "fio rw=rw 1M qd8 on $dev (reads meeting the writes of the same blocks): no I/O error"
	else
		nok "fio rw=rw 1M qd8 on $dev (reads meeting the writes of the same blocks): no I/O error"
		tail -8 "$log" | sed 's/^/#   /'
	fi
done
sleep 1.2
# a READ request's pages are a destination only: the checked bytes are copied in once
check "zero copy: every byte read was copied once, staging -> the request's pages (filled = bytes_read)" eval \
	'(for d in ilin istr imir; do [ "$(dst $d filled)" = "$(dst $d bytes_read)" ] &&
	  [ "$(dst $d bytes_read)" -gt 0 ] || exit 1; done)'
check "no read disagreed with its sum and no request failed on the healthy devices" eval \
	'(for d in ilin istr imir; do [ "$(dst $d mismatches)" = 0 ] && [ "$(dst $d errors)" = 0 ] &&
	  [ "$(dst $d sums)" -gt 0 ] || exit 1; done)'

# ---- a flush makes the sums durable: the file holds the CRC32C of what was written ----
crc_file() {	# META DATA FIRST-BLOCK COUNT: "blocks mismatches", the file's sums against DATA
	python3 - "$@" <<-'EOF'
	import struct, sys
	T = []
	for i in range(256):
	    c = i
	    for _ in range(8):
	        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
	    T.append(c)
	def crc(b):
	    c = 0xFFFFFFFF
	    for x in b:
	        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
	    return c ^ 0xFFFFFFFF
	assert crc(b"123456789") == 0xE3069283
	meta = open(sys.argv[1], "rb").read()
	head = dict(l.split("=", 1) for l in meta[:4096].rstrip(b"\0").decode().splitlines()[1:])
	size, region = int(head["size"]), int(head["region_size"])
	regions = (size + region - 1) // region
	sums = 4096 + (regions + 4095) // 4096 * 4096
	data = open(sys.argv[2], "rb").read()
	lo, nr = int(sys.argv[3]), int(sys.argv[4])
	bad = 0
	for b in range(lo, lo + nr):
	    want, = struct.unpack_from("<I", meta, sums + 4 * b)
	    bad += crc(data[(b - lo) * 4096:(b - lo + 1) * 4096]) != want
	print(nr, bad)
	EOF
}
head -c $((16 * MiB)) /dev/urandom > "$T/pattern"
dd if="$T/pattern" of="$MIR" bs=1M count=16 oflag=direct conv=fsync status=none
read -r fn fbad <<<"$(crc_file "$STATE/device-imir.integrity" "$T/pattern" 0 64 2>&1)"
check "after fsync of the device the file holds the kernel's CRC32C of each 4 KiB written (${fn:-?} blocks, ${fbad:-?} wrong)" \
	eval '[ "${fn:-0}" = 64 ] && [ "${fbad:-x}" = 0 ]'
dd if="$T/pattern" of="$LIN" bs=1M count=16 oflag=direct conv=fsync status=none
dd if="$T/pattern" of="$STR" bs=1M count=16 oflag=direct conv=fsync status=none

# ---- a block altered on a member behind the daemon's back ----
# linear: device block 300 is l0's block 300
flip "$T/l0" $((300 * 4096 + 100))
m0=$(dst ilin mismatches)
if dd if="$LIN" of=/dev/null bs=4k skip=300 count=1 iflag=direct status=none 2> "$ART/eio-lin.txt"; then
	nok "linear: a read of the altered block fails (it returned bytes)"
else
	ok "linear: a read of the altered block fails ($(head -1 "$ART/eio-lin.txt"))"
fi
check "linear: the error is EIO" grep -q "Input/output error" "$ART/eio-lin.txt"
check "linear: the blocks beside it read back as written" \
	eval 'cmp -s <(head -c $((300 * 4096)) "$T/pattern") <(dd if="$LIN" bs=4k count=300 iflag=direct status=none)'
journalctl -u iou-offloadd --no-pager > "$ART/integrity-journal-1.log"
check "linear: the journal names the member, its offset, the sum expected and the one found" \
	grep -qE "device ilin: integrity: $T/l0 at $((300 * 4096)) \(device offset $((300 * 4096))\): expected crc32c [0-9a-f]{8}, found [0-9a-f]{8}; the read fails \(EIO\)" \
	"$ART/integrity-journal-1.log"
sleep 1.2
check "linear: status counts the mismatch and the failed request" eval \
	'[ "$(dst ilin mismatches)" -gt "$m0" ] && [ "$(dst ilin errors)" -gt 0 ]'
# fio reading it back: an I/O error, never wrong bytes
fio --name=v --filename="$LIN" --ioengine=io_uring --direct=1 --rw=read --bs=64k --size=2M \
	> "$ART/fio-lin-altered.log" 2>&1
check "linear: fio reading across it gets an I/O error, not the altered bytes" \
	grep -q "Input/output error" "$ART/fio-lin-altered.log"
# written again through the device: data and sum agree once more
dd if="$T/pattern" of="$LIN" bs=4k skip=300 seek=300 count=1 oflag=direct conv=fsync status=none
check "linear: the block written again through the device reads back" \
	eval 'cmp -s <(head -c $((301 * 4096)) "$T/pattern" | tail -c 4096) <(dd if="$LIN" bs=4k skip=300 count=1 iflag=direct status=none)'

# stripe: 64K units over 3 members; device unit k is on member k % 3 at (k / 3) * 64K
unit=$((64 << 10)) k=17 within=$((3 * 4096))
soff=$(( (k / 3) * unit + within )) smem=s$((k % 3)) doff=$((k * unit + within))
flip "$T/$smem" $((soff + 7))
if dd if="$STR" of=/dev/null bs=4k skip=$((doff / 4096)) count=1 iflag=direct status=none 2> "$ART/eio-str.txt"; then
	nok "stripe: a read of the block altered on $smem fails (it returned bytes)"
else
	ok "stripe: a read of the block altered on $smem fails ($(head -1 "$ART/eio-str.txt"))"
fi
journalctl -u iou-offloadd --no-pager > "$ART/integrity-journal-2.log"
check "stripe: the journal names $smem at $soff (device offset $doff)" \
	grep -q "device istr: integrity: $T/$smem at $soff (device offset $doff): expected crc32c" \
	"$ART/integrity-journal-2.log"
check "stripe: the rest of that unit reads back as written" \
	eval 'cmp -s <(head -c $((doff)) "$T/pattern" | tail -c 8192) <(dd if="$STR" bs=4k skip=$((doff / 4096 - 2)) count=2 iflag=direct status=none)'
dd if="$T/pattern" of="$STR" bs=4k skip=$((doff / 4096)) seek=$((doff / 4096)) count=1 oflag=direct \
	conv=fsync status=none

# mirror: leg m0 is the one read (read_policy = primary); 8 blocks altered there
sleep 1.2
r0=$(dst imir repairs)
for b in 10 11 40 41 42 100 2000 4000; do flip "$T/m0" $((b * 4096 + 5)); done
check "mirror: the device reads back what was written, though its first leg was altered" \
	eval 'cmp -s "$T/pattern" <(dd if="$MIR" bs=1M iflag=direct status=none)'
sleep 1.2
note "imir: $(dst imir mismatches) mismatches, $(dst imir repairs) repairs, $(dst imir errors) errors"
check "mirror: status counts 8 repairs and no failed request" eval \
	'[ $(( $(dst imir repairs) - r0 )) = 8 ] && [ "$(dst imir errors)" = 0 ]'
check "mirror: the altered leg is healed (both legs equal the data written)" eval \
	'cmp -s "$T/m0" "$T/m1" && cmp -s "$T/m0" "$T/pattern"'
journalctl -u iou-offloadd --no-pager > "$ART/integrity-journal-3.log"
check "mirror: the journal names the healed blocks" \
	grep -q "device imir: integrity: healed $T/m0 at $((4000 * 4096)) from the other leg" \
	"$ART/integrity-journal-3.log"
# fio: its blocks written, a leg altered under them, then read back and verified
fio --name=w --filename="$MIR" --ioengine=io_uring --direct=1 --rw=randwrite --bs=16k --size=8M \
	--verify=crc32c --do_verify=0 > "$ART/fio-mir-write.log" 2>&1
for b in 3 333 1500 1999; do flip "$T/m0" $((b * 4096 + 9)); done
if fio --name=w --filename="$MIR" --ioengine=io_uring --direct=1 --rw=randwrite --bs=16k --size=8M \
	--verify=crc32c --verify_only --verify_fatal=1 > "$ART/fio-mir-verify.log" 2>&1 &&
   grep -q "err= 0" "$ART/fio-mir-verify.log" && ! grep -q "verify: bad" "$ART/fio-mir-verify.log"; then
	ok "mirror: fio verify passes over blocks altered on the leg it reads"
else
	nok "mirror: fio verify passes over blocks altered on the leg it reads"
	tail -15 "$ART/fio-mir-verify.log" | sed 's/^/#   /'
fi

# ---- the copying path: the sums by ISA-L on the tag buffers ----
LC=$(dst ilinc path) MC=$(dst imirc path)
for i in $(seq 150); do [ "$(dst imirc state)" = running ] && break; sleep 0.2; done
check "copy path: the devices run data_path copy on engine uring with integrity crc32c" eval \
	'(for d in ilinc imirc; do [ "$(dst $d data_path)" = copy ] && [ "$(dst $d engine)" = uring ] &&
	  [ "$(dst $d integrity)" = crc32c ] || exit 1; done)'
for dev in "$LC" "$MC"; do
	fio_case "$dev" copy-randrw --do_verify=1 --rw=randrw --bsrange=4k-256k --iodepth=8 --size=4M
done
dd if="$T/pattern" of="$LC" bs=1M count=8 oflag=direct conv=fsync status=none
dd if="$T/pattern" of="$MC" bs=1M count=4 oflag=direct conv=fsync status=none
sleep 1.2
r0=$(dst imirc repairs)
flip "$T/lc1" $((17 * 4096 + 1))
flip "$T/mc0" $((33 * 4096 + 1))
check "copy path, linear: a read of a block altered on a member fails with EIO" eval \
	'! dd if="$LC" of=/dev/null bs=4k skip=$((1024 + 17)) count=1 iflag=direct status=none 2>/dev/null'
check "copy path, mirror: the device reads back what was written, the altered leg healed" eval \
	'cmp -s <(head -c $((4 * MiB)) "$T/pattern") <(dd if="$MC" bs=1M iflag=direct status=none) &&
	 cmp -s "$T/mc0" "$T/mc1"'
sleep 1.2
note "ilinc: $(dst ilinc sums) blocks summed, $(dst ilinc mismatches) mismatches; imirc: $(dst imirc repairs) repairs"
check "copy path: status counts the sums (ISA-L), the mismatch and the repair" eval \
	'[ "$(dst ilinc sums)" -gt 0 ] && [ "$(dst ilinc mismatches)" -ge 1 ] &&
	 [ $(( $(dst imirc repairs) - r0 )) = 1 ] && [ "$(dst imirc errors)" = 0 ]'
dd if="$T/pattern" of="$LC" bs=4k skip=$((1024 + 17)) seek=$((1024 + 17)) count=1 oflag=direct \
	conv=fsync status=none

# ---- scrub: the legs compared while the device serves, at scrub_rate ----
out=$(iou-offloadd scrub ilin 2>&1); rc=$?
check "scrub of a linear device: not scrubbed, exit 4 ($out)" eval \
	'[ $rc = 4 ] && printf "%s" "$out" | grep -q "not scrubbed: scrub compares a mirror'"'"'s legs"'
# leg m1 is never read (read_policy = primary): only a scrub finds what happened to it
for b in 7 700 2500 2900; do flip "$T/m1" $((b * 4096 + 3)); done
# fio writes (then verifies) 12M..16M while the scrub runs: 4 s of writes at 1 MiB/s
fio --name=busy --filename="$MIR" --ioengine=io_uring --direct=1 --rw=randwrite --bs=16k \
	--iodepth=8 --size=4M --offset=12M --rate=1m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	> "$ART/fio-scrub-busy.log" 2>&1 &
bpid=$!
t0=$(date +%s.%N)
out=$(iou-offloadd scrub imir 2>&1); rc=$?
t1=$(date +%s.%N)
took=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
note "scrub imir: exit $rc: $out ($took s)"
check "scrub of the integrity mirror finds the 4 blocks altered on its second leg, repairs them, exit 0" eval \
	'[ $rc = 0 ] && printf "%s" "$out" | grep -q "4 block(s) of 4 KiB differed, 4 repaired"'
check "scrub_rate = 4M: 16 MiB took at least 3 s ($took s)" eval 'awk -v t="$took" "BEGIN { exit !(t >= 3) }"'
wait $bpid; brc=$?
check "fio verify on the mirror while it was scrubbed: no error" eval \
	'[ $brc = 0 ] && grep -q "err= 0" "$ART/fio-scrub-busy.log" && ! grep -q "verify: bad" "$ART/fio-scrub-busy.log"'
check "after the scrub the legs are identical" cmp -s "$T/m0" "$T/m1"
iou-offloadd status --json > "$ART/status-after-scrub.json" 2>&1
check "status --json: imir's last_scrub has 4 mismatches, 4 repaired, complete" python3 -c '
import json, sys
d = {x["name"]: x for x in json.load(open(sys.argv[1]))["devices"]}
s = d["imir"]["last_scrub"]
sys.exit(not (s["mismatches"] == 4 and s["repaired"] == 4 and s["complete"] and s["legs"] == 2))' "$ART/status-after-scrub.json"
iou-offloadd status > "$ART/status-after-scrub.txt" 2>&1
check "status: the table shows imir's last scrub" grep -q "last scrub: 4096 block(s) of 2 legs compared, 4 differed, 4 repaired" "$ART/status-after-scrub.txt"
# without integrity: which leg is right is not known; reported, not repaired
PM=$(dst pmir path)
for i in $(seq 150); do [ "$(dst pmir state)" = running ] && break; sleep 0.2; done
dd if="$T/pattern" of="$PM" bs=1M count=8 oflag=direct conv=fsync status=none
flip "$T/p1" $((1234 * 4096))
flip "$T/p1" $((99 * 4096))
out=$(iou-offloadd scrub pmir 2>&1); rc=$?
note "scrub pmir: exit $rc: $out"
check "scrub of a mirror without integrity reports the 2 blocks that differ, repairs none, exit 1" eval \
	'[ $rc = 1 ] && printf "%s" "$out" | grep -q "2 block(s) of 4 KiB differed, 0 repaired (integrity = none: reported only)"'
check "and leaves the legs as they were" eval '! cmp -s "$T/p0" "$T/p1"'
journalctl -u iou-offloadd --no-pager > "$ART/integrity-journal-4.log"
check "the journal names where the legs differ" \
	grep -q "device pmir: scrub: $T/p0 and $T/p1 differ at $((99 * 4096)) (no integrity: reported only)" \
	"$ART/integrity-journal-4.log"
# the packaged unit the monthly timer starts, as the timer would: in its
# sandbox the request reaches the daemon through runtime_dir
if systemctl cat iou-offload-scrub@imir.service > /dev/null 2>&1; then
	flip "$T/m1" $((3000 * 4096 + 9))
	st=0
	systemctl start iou-offload-scrub@imir.service || st=$?
	said=$(journalctl -q -o cat -u iou-offload-scrub@imir.service 2>/dev/null | grep 'differed' | tail -1)
	check "iou-offload-scrub@imir.service repairs the block altered on imir's second leg and succeeds ($st: $said)" eval \
		'[ $st = 0 ] && printf "%s" "$said" | grep -q "1 block(s) of 4 KiB differed, 1 repaired"'
	check "after the unit's scrub the legs are identical" cmp -s "$T/m0" "$T/m1"
	st=0
	systemctl start iou-offload-scrub@pmir.service || st=$?
	said=$(journalctl -q -o cat -u iou-offload-scrub@pmir.service 2>/dev/null | grep 'differed' | tail -1)
	check "iou-offload-scrub@pmir.service fails where legs differ and nothing can say which is right ($st: $said)" eval \
		'[ $st != 0 ] && [ "$(systemctl show -p Result --value iou-offload-scrub@pmir.service)" = exit-code ] &&
		 printf "%s" "$said" | grep -q "2 block(s) of 4 KiB differed, 0 repaired"'
	systemctl reset-failed iou-offload-scrub@pmir.service 2>/dev/null
else
	skip "the scrub unit against mirror devices" "iou-offload-scrub@.service is not installed"
fi

# ---- a clean stop: the sums durable, no dirty region; they hold across the restart ----
systemctl stop iou-offloadd
for i in $(seq 50); do [ ! -e "$LIN" ] && break; sleep 0.2; done
dd if="$T/pattern" of="$T/l1" bs=4k count=1 seek=5 conv=notrunc status=none	# l1's block 5: altered while stopped
python3 -c '
import sys
meta = open(sys.argv[1], "rb").read()
print(sum(meta[4096:4096 + 16]))' "$STATE/device-ilin.integrity" > "$T/dirty-after-stop"
check "a clean stop leaves every region clean in the file" [ "$(cat "$T/dirty-after-stop")" = 0 ]
systemctl start iou-offloadd
for i in $(seq 50); do [ -n "$(dst ilin path)" ] && [ -b "$(dst ilin path)" ] && break; sleep 0.2; done
LIN=$(dst ilin path) STR=$(dst istr path) MIR=$(dst imir path)
check "after a clean stop the next start takes no region's sums anew" eval \
	'[ "$(dst ilin recomputed)" = 0 ] && [ "$(dst imir recomputed)" = 0 ]'
# l1 block 5 is device block 2048 + 5 (l0 has 8M)
check "the sums kept across the restart still catch a block altered while the daemon was down" eval \
	'! dd if="$LIN" of=/dev/null bs=4k skip=$((2048 + 5)) count=1 iflag=direct status=none 2>/dev/null'
dd if="$T/pattern" of="$LIN" bs=4k skip=$((2048 + 5)) seek=$((2048 + 5)) count=1 oflag=direct \
	conv=fsync status=none

# ---- kill -9 under fio verify: the dirty regions' sums taken again at the take-over ----
PID1=$(systemctl show -p MainPID --value iou-offloadd)
declare -A KPID KDEV=([ilin]=$LIN [istr]=$STR [imir]=$MIR) KBASE
for d in ilin istr imir; do KBASE[$d]=$(dst $d bytes_written); done
for d in ilin istr imir; do
	fio --name=kill9 --filename="${KDEV[$d]}" --ioengine=io_uring --direct=1 --rw=randwrite \
		--bsrange=4k-256k --iodepth=16 --size=12M --rate=1536k --verify=crc32c --verify_fatal=1 \
		--do_verify=1 > "$ART/fio-kill9-$d.log" 2>&1 &
	KPID[$d]=$!
done
# the kill lands once each device has completed 3 MiB of fio's writes (their
# sums only in the daemon's memory: no flush since), with more still to come:
# 8 s of fio at 1.5 MiB/s (at 3 MiB/s, on the debug kernel, two had finished
# by the time the status file showed 3 MiB on the third)
written() {
	local d
	for d in ilin istr imir; do
		[ $(( $(dst $d bytes_written) - ${KBASE[$d]} )) -ge $((3 * MiB)) ] || return 1
	done
}
for i in $(seq 150); do written && break; sleep 0.2; done
note "written before the kill: ilin $(( $(dst ilin bytes_written) - ${KBASE[ilin]} )), istr $(( $(dst istr bytes_written) - ${KBASE[istr]} )), imir $(( $(dst imir bytes_written) - ${KBASE[imir]} )) bytes"
check "each device had completed 3 MiB of fio's writes before the kill" written
running=0
for d in ilin istr imir; do kill -0 ${KPID[$d]} 2>/dev/null && running=$((running + 1)); done
systemctl kill -s KILL iou-offloadd
check "fio was still writing on all three devices when the daemon got SIGKILL" [ $running -eq 3 ]
for d in ilin istr imir; do
	klog=$ART/fio-kill9-$d.log
	wait ${KPID[$d]}; fiorc=$?
	what="fio verify=crc32c on ${KDEV[$d]} ($d) across kill -9: no I/O error, verify passed"
	if [ $fiorc -eq 0 ] && grep -q "err= 0" "$klog" && ! grep -q "verify: bad" "$klog"; then
		ok "$what"
	else
		nok "$what (exit $fiorc)"
		tail -15 "$klog" | sed 's/^/#   /'
	fi
done
for i in $(seq 100); do
	[ -n "$(dst imir path)" ] && [ "$(systemctl show -p MainPID --value iou-offloadd)" != "$PID1" ] && break
	sleep 0.2
done
sleep 1.2
check "the restarted daemon took the devices over" eval \
	'[ "$(dst ilin path)" = "$LIN" ] && [ "$(dst istr path)" = "$STR" ] && [ "$(dst imir path)" = "$MIR" ]'
note "after kill -9: recomputed ilin=$(dst ilin recomputed) istr=$(dst istr recomputed) imir=$(dst imir recomputed) regions"
check "the take-over took the sums of the regions being written anew (dirty in the file)" eval \
	'[ "$(dst ilin recomputed)" -gt 0 ] && [ "$(dst istr recomputed)" -gt 0 ] && [ "$(dst imir recomputed)" -gt 0 ]'
check "no read disagreed with its sum after the take-over, no request failed" eval \
	'(for d in ilin istr imir; do [ "$(dst $d mismatches)" = 0 ] && [ "$(dst $d errors)" = 0 ] || exit 1; done)'
check "every block of each device reads (no false EIO anywhere)" eval \
	'(for d in "$LIN" "$STR" "$MIR"; do dd if="$d" of=/dev/null bs=1M iflag=direct status=none || exit 1; done)'
systemctl stop iou-offloadd
check "the mirror's legs are identical after the kill and the take-over" cmp -s "$T/m0" "$T/m1"
journalctl -u iou-offloadd --no-pager > "$ART/integrity-journal.log" 2>&1

# ---- queues of their own: a daemon outside systemd, its own state ----
Q=$T/q
mkdir -p "$Q/state"
for m in 0 1; do truncate -s $((16 * MiB)) "$T/q$m"; done
qconf() {	# NAME: $Q/NAME.conf, a linear integrity device of two queues of 64 x 1M over q0 q1
	sed 's/^[[:space:]]*//' > "$Q/$1.conf" <<-EOF
	[daemon]
	state_dir = $Q/state
	runtime_dir = $Q/state
	[device $1]
	target = linear
	engine = bpf
	integrity = crc32c
	nr_queues = 2
	queue_depth = 64
	max_io_size = 1M
	backing = $T/q0
	backing = $T/q1
	EOF
}
qstop() {	# PID WHAT: SIGTERM ends it within 30 s (its threads noted if not, then SIGKILL)
	local i
	kill -TERM "$1" 2>/dev/null
	for i in $(seq 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.2; done
	if kill -0 "$1" 2>/dev/null; then
		nok "$2"
		for t in /proc/$1/task/*; do
			note "thread $(cat $t/comm): $(tr '\n' ' ' < $t/wchan 2>/dev/null) $(tr '\n' ' ' < $t/stack 2>/dev/null)"
		done
		kill -KILL "$1"
	else
		ok "$2"
	fi
	wait "$1" 2>/dev/null
}
STATUS_SYS=$STATUS
STATUS=$Q/state/status

# the program's sums[] holds the entries of both: 2 x 64 x 1M / 4K = 32768
qconf iq2
"$BIN" -c "$Q/iq2.conf" -l info > "$ART/iq2.log" 2>&1 &
QPID=$!
for i in $(seq 300); do QDEV=$(dst iq2 path); [ -n "$QDEV" ] && [ -b "$QDEV" ] && break; sleep 0.2; done
check "a device with integrity and two queues of 64 x 1M starts on zero copy" eval \
	'[ -n "$QDEV" ] && [ -b "$QDEV" ] && [ "$(dst iq2 data_path)" = zero-copy ]'
if [ -n "$QDEV" ] && [ -b "$QDEV" ]; then
	fio_case "$QDEV" two-queues --do_verify=1 --rw=randwrite --bsrange=4k-1M --iodepth=16 \
		--numjobs=2 --cpus_allowed=0-1 --cpus_allowed_policy=split --offset_increment=16M \
		--size=16M
	# each queue's thread (ublkN:qK) sums its requests' blocks: both busy
	qticks() {	# K: utime + stime of queue K's thread
		local t
		for t in /proc/$QPID/task/*; do
			case "$(cat $t/comm)" in
			"ublk${QDEV##*/ublkb}:q$1") awk '{ sub(/.*\) /, ""); print $12 + $13 }' $t/stat ;;
			esac
		done
	}
	note "CPU ticks of the queue threads: q0 $(qticks 0), q1 $(qticks 1)"
	check "both queues' threads summed under fio (5 ticks of CPU or more each)" eval \
		'[ "$(qticks 0)" -ge 5 ] && [ "$(qticks 1)" -ge 5 ]'
	sleep 1.2
	check "no read disagreed with its sum and no request failed on two queues" eval \
		'[ "$(dst iq2 mismatches)" = 0 ] && [ "$(dst iq2 errors)" = 0 ] && [ "$(dst iq2 sums)" -gt 0 ]'
else
	tail -5 "$ART/iq2.log" | sed 's/^/#   /'
fi
qstop $QPID "SIGTERM stops the daemon with the two-queue device"
ublks_gone() {	# every ublk device deleted, within 10 s
	local i
	for i in $(seq 50); do [ -z "$(ls /sys/class/ublk-char)" ] && return 0; sleep 0.2; done
	return 1
}
check "no ublk device is left after the stops (DEL_DEV_ASYNC done)" ublks_gone

# the second queue fails its setup after the first has fetched every tag
# (fail_queue.so: the mmap of its descriptors fails, as ENOMEM would)
qconf iqf
IOU_FAIL_QUEUE_MMAP=1 LD_PRELOAD=$here/fail_queue.so "$BIN" -c "$Q/iqf.conf" -l info \
	> "$ART/iqf.log" 2>&1 &
QPID=$!
for i in $(seq 300); do grep -q "device iqf: not started" "$ART/iqf.log" && break; sleep 0.2; done
check "a device whose second queue cannot be set up is not started, and the log says why" eval \
	'grep -q "device iqf: queue 1: setup failed: Cannot allocate memory" "$ART/iqf.log" &&
	 grep -q "device iqf: not started" "$ART/iqf.log"'
check "its ublk device is deleted: none is left behind" ublks_gone
note "ublk devices now: $(ls /sys/class/ublk-char | tr '\n' ' ')"
qstop $QPID "SIGTERM stops the daemon after the failed start"
STATUS=$STATUS_SYS

rm -f "$DROPIN"
systemctl daemon-reload
rm -rf "$T"
rm -f "$STATE"/device-ilin.* "$STATE"/device-istr.* "$STATE"/device-imir.* "$STATE"/device-pmir.*
rm -f "$STATE"/device-ilinc.* "$STATE"/device-imirc.* "$STATE"/imir.scrub "$STATE"/pmir.scrub
plan
summary
tap_status
