#!/bin/bash
# Guest suite ublk-admin: block devices as a storage admin handles them
# (issue 35), under systemd. A mounted device across a reload that would
# change or remove it (refused, and `systemctl reload` fails), a restart, a
# package upgrade and a stop (handed over to the next daemon, never
# deleted under the mount); members held exclusively (a mounted disk and a
# dm leg refused, also by --check-config --open; a served member cannot be
# taken); kill -9 then stop (nothing left behind); a reload the service
# cannot see (PrivateTmp) fails. Prints TAP. Installed as
# usr/lib/iou-offload/tests/<NN>-ublk-admin/run (NN: tests/vm/suites.list).
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$here/../lib; [ -f "$lib/tap.sh" ] || lib=$here/../../lib
. "$lib/tap.sh"
. "$lib/daemon.sh"

[ -e /dev/ublk-control ] || skip_all "no /dev/ublk-control (kernel without CONFIG_BLK_DEV_UBLK)"
for tool in fio mkfs.ext4 dmsetup losetup; do
	command -v $tool >/dev/null || skip_all "$tool is not installed"
done

T=${IOU_TEST_DIR:-/srv/iou-offload/test}/ublk-admin
M=$T/mnt
rm -rf "$T"
mkdir -p "$T" "$M"
MiB=$((1 << 20))
U=iou-offloadd

DROPIN=/run/systemd/system/iou-offloadd.service.d/ublk-admin.conf
mkdir -p "${DROPIN%/*}"
printf '[Service]\nCapabilityBoundingSet=CAP_SYS_ADMIN\n' > "$DROPIN"
systemctl daemon-reload

jrnl() { journalctl -u $U --no-pager --since "@$SINCE" 2>/dev/null; }
restarts() { systemctl show -p NRestarts --value $U; }
# until device $1 has a node in the status file (the file is rewritten every second)
wait_dev() {
	local i
	for i in $(seq 100); do [ -b "$(dst "$1" path)" ] && return 0; sleep 0.2; done
	return 1
}
# no ext4 error, journal abort or lost write on device $1 since the suite began
fs_clean() { ! dmesg | sed -n "/iou-admin-start-$$/,\$p" | grep -E "EXT4-fs.*\(${1##*/}\).*(error|Aborting|data loss)|Buffer I/O error on dev ${1##*/}"; }
# systemctl VERB, bounded: its exit status in $rc, its seconds in $secs
timed() {
	local t0=$(date +%s)
	out=$(timeout 150 systemctl "$@" $U 2>&1); rc=$?
	secs=$(( $(date +%s) - t0 ))
	note "systemctl $*: exit $rc after $secs s${out:+: $out}"
}
echo "iou-admin-start-$$" > /dev/kmsg
SINCE=$(date +%s)

truncate -s $((32 * MiB)) "$T/fs0"
for f in o0 o1 x0 n0; do truncate -s $((8 * MiB)) "$T/$f"; done
FS="[device fs]
	target = linear
	engine = uring
	backing = $T/fs0"
FS_SMALLER="[device fs]
	target = linear
	engine = uring
	size = 16M
	backing = $T/fs0"
OTHER="[device other]
	target = mirror
	engine = uring
	backing = $T/o0
	backing = $T/o1"
EXTRA="[device extra]
	target = linear
	engine = uring
	backing = $T/x0"

# ---- members held exclusively ----
truncate -s $((16 * MiB)) "$T/la" "$T/lb" "$T/lc"
LA=$(losetup -f --show "$T/la") LB=$(losetup -f --show "$T/lb") LC=$(losetup -f --show "$T/lc")
mkfs.ext4 -q -F "$LA" && mkdir -p "$T/mnt-a" && mount "$LA" "$T/mnt-a"
dmsetup create iou-admin-leg --table "0 $(blockdev --getsz "$LB") linear $LB 0"
sysconf "[device onmounted]
	target = linear
	engine = uring
	backing = $LA
	[device ondmleg]
	target = linear
	engine = uring
	backing = $LB
	[device free]
	target = linear
	engine = uring
	backing = $LC"
out=$($BIN --check-config --open /etc/iou-offloadd.conf 2>&1); rc=$?
printf '%s\n' "$out" > "$ART/admin-check-open.txt"
check "--check-config --open refuses a member that is mounted: exit 78, file:line, in use (EBUSY)" eval \
	'[ $rc -eq 78 ] && grep -q "^/etc/iou-offloadd.conf:[0-9]*: \[device onmounted\]: backing $LA is in use (EBUSY)" "$ART/admin-check-open.txt"'
check "--check-config --open refuses a member that is a dm device's leg" \
	grep -q "^/etc/iou-offloadd.conf:[0-9]*: \[device ondmleg\]: backing $LB is in use (EBUSY)" "$ART/admin-check-open.txt"
check "--check-config --open finds nothing against the free member (the control)" \
	eval '! grep -q "device free" "$ART/admin-check-open.txt"'
[ $rc -eq 78 ] || note "$out"
systemctl start $U
wait_dev free
check "the daemon does not serve a device over a mounted disk, and says why" eval \
	'[ "$(dst onmounted state)" = failed ] && dst onmounted error | grep -q "in use (EBUSY)"'
check "nor over a dm device's leg" eval \
	'[ "$(dst ondmleg state)" = failed ] && dst ondmleg error | grep -q "in use (EBUSY)"'
check "the device over the free member is served (the control)" [ -b "$(dst free path)" ]
check "the mounted disk is untouched: still mounted, fsck clean after unmount" eval \
	'mountpoint -q "$T/mnt-a" && umount "$T/mnt-a" && fsck.ext4 -f -n "$LA" >/dev/null 2>&1'
check "a served member cannot be claimed under the device: mkfs.ext4 refuses it" \
	eval '! mkfs.ext4 -q -F "$LC" >/dev/null 2>&1'
check "nor can dm map it" eval \
	'! dmsetup create iou-admin-leg2 --table "0 $(blockdev --getsz "$LC") linear $LC 0" 2>/dev/null'
systemctl stop $U
dmsetup remove iou-admin-leg2 2>/dev/null
dmsetup remove iou-admin-leg
losetup -d "$LA" "$LB" "$LC"

# ---- reload: a mounted device is never stopped under its file system ----
sysconf "$FS
	$OTHER"
systemctl start $U
wait_dev fs && wait_dev other
FSDEV=$(dst fs path)
note "fs=$FSDEV other=$(dst other path)"
mkfs.ext4 -q -F "$FSDEV" && mount "$FSDEV" "$M"
head -c $((4 * MiB)) /dev/urandom > "$M/before" && sync
SUM=$(sum "$M/before")
NR0=$(restarts)
sysconf "$FS_SMALLER
	$OTHER
	$EXTRA"
timed reload
check "a reload that changes a mounted device fails: systemctl reload exits non-zero" \
	eval '[ $rc -ne 0 ] && [ $rc -ne 124 ]'
check "the journal says which device and why: in use, the change refused (EBUSY)" eval \
	'jrnl | grep -q "device fs: changed in the configuration, but $FSDEV is in use .*refused (EBUSY)"'
check "the mounted device keeps its node and its size" eval \
	'[ "$(dst fs path)" = "$FSDEV" ] && [ "$(blockdev --getsize64 "$FSDEV")" = $((32 * MiB)) ]'
check "the file system on it stays writable (a file written and synced)" eval \
	'head -c $MiB /dev/urandom > "$M/after-reload" && sync "$M/after-reload"'
check "no ext4 error, journal abort or lost write on $FSDEV" fs_clean "$FSDEV"
wait_dev extra
check "the other edit in the same reload took: device extra was added" [ -b "$(dst extra path)" ]
check "status notes the refused change on the device" eval 'dst fs error | grep -q "change is refused"'
check "the daemon stayed up: active, never restarted by the watchdog" eval \
	'systemctl is-active -q $U && [ "$(restarts)" = "$NR0" ]'
sysconf "$OTHER
	$EXTRA"
timed reload
check "a reload that removes a mounted device fails too, and the device stays" eval \
	'[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -b "$FSDEV" ] && [ "$(dst fs path)" = "$FSDEV" ]'
sysconf "$FS
	$OTHER"
timed reload
check "with the mounted device's section as it runs, the reload succeeds (exit 0)" [ $rc -eq 0 ]
for i in $(seq 50); do [ -z "$(dst extra path)" ] && break; sleep 0.2; done
check "and removes the idle device extra" eval '[ -z "$(dst extra path)" ] && [ -z "$(dst fs error)" ]'

# ---- restart and upgrade: the mounted device is handed over, fio verify on it throughout ----
fio --name=admin --directory="$M" --ioengine=io_uring --direct=1 --rw=randwrite --bs=16k \
	--iodepth=8 --size=8M --rate=1m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	> "$ART/admin-fio-restart.log" 2>&1 &
FIO=$!
sleep 2
PID1=$(systemctl show -p MainPID --value $U)
timed restart
check "systemctl restart with a device mounted and written returns promptly, exit 0" \
	eval '[ $rc -eq 0 ] && [ $secs -lt 60 ]'
wait_dev fs
check "the device was handed over, then taken over: same node, no new one" eval \
	'[ "$(dst fs path)" = "$FSDEV" ] && [ "$(systemctl show -p MainPID --value $U)" != "$PID1" ]'
check "the journal says so: handed over by the old daemon, taken over by the new" eval \
	'jrnl | grep -q "device fs: $FSDEV .*handed over" &&
	 jrnl | grep -q "device fs: taking over $FSDEV"'
check "fio was still writing to the file system when the daemon restarted" kill -0 $FIO
wait $FIO; frc=$?
if [ $frc -eq 0 ] && grep -q "err= 0" "$ART/admin-fio-restart.log" && ! grep -q "verify: bad" "$ART/admin-fio-restart.log"; then
	ok "fio verify=crc32c on ext4 on $FSDEV across the restart: no I/O error, verify passed"
else
	nok "fio verify=crc32c on ext4 on $FSDEV across the restart: no I/O error, verify passed (exit $frc)" \
		"$ART/admin-fio-restart.log"
fi
check "no ext4 error, journal abort or lost write on $FSDEV across the restart" fs_clean "$FSDEV"
check "what was written before the restart reads back" eval '[ "$(sum "$M/before")" = "$SUM" ]'

# a device that is only open (fio on the raw device, as a VM's disk would be): kept too
OTHDEV=$(dst other path)
fio --name=raw --filename="$OTHDEV" --ioengine=io_uring --direct=1 --rw=randwrite --bs=16k \
	--iodepth=8 --size=6M --rate=1m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	> "$ART/admin-fio-raw.log" 2>&1 &
FIO=$!
sleep 2
timed restart
wait_dev other
check "systemctl restart keeps a device that is only open: same node" eval \
	'[ $rc -eq 0 ] && [ "$(dst other path)" = "$OTHDEV" ] && jrnl | grep -q "device other: $OTHDEV handed over"'
check "fio was still writing to the raw device when the daemon restarted" kill -0 $FIO
wait $FIO; frc=$?
if [ $frc -eq 0 ] && grep -q "err= 0" "$ART/admin-fio-raw.log" && ! grep -q "verify: bad" "$ART/admin-fio-raw.log"; then
	ok "fio verify=crc32c on the raw device across the restart: no I/O error, verify passed"
else
	nok "fio verify=crc32c on the raw device across the restart: no I/O error, verify passed (exit $frc)" \
		"$ART/admin-fio-raw.log"
fi

version=$(dpkg-query -W -f='${Version}' iou-offload 2>/dev/null)
prerm=$(dpkg-query --control-path iou-offload prerm 2>/dev/null)
check "the package's prerm stops iou-offloadd-release.service (which deletes the devices) after the daemon, on remove" \
	eval '[ -n "$prerm" ] && awk "/deb-systemd-invoke stop .iou-offloadd.service./ { d = NR }
		/deb-systemd-invoke stop .iou-offloadd-release.service./ { r = NR }
		END { exit !(d && r > d) }" "$prerm"'
postinst=$(dpkg-query --control-path iou-offload postinst 2>/dev/null)
PID2=$(systemctl show -p MainPID --value $U)
if [ -n "$postinst" ] && [ -x "$postinst" ]; then
	timeout 150 "$postinst" configure "$version" > "$ART/admin-postinst.log" 2>&1; prc=$?
	note "postinst configure $version: exit $prc"
	if [ "$(systemctl show -p MainPID --value $U)" = "$PID2" ]; then
		skip "a package upgrade keeps the mounted device" "the postinst did not restart the unit"
	else
		wait_dev fs
		check "a package upgrade (the postinst restarting the unit) keeps the mounted device: same node, writable, no fs error" eval \
			'[ $prc -eq 0 ] && [ "$(dst fs path)" = "$FSDEV" ] &&
			 head -c $MiB /dev/urandom > "$M/after-upgrade" && sync "$M/after-upgrade" &&
			 fs_clean "$FSDEV" && [ "$(sum "$M/before")" = "$SUM" ]'
	fi
else
	skip "a package upgrade keeps the mounted device" "no postinst of iou-offload installed"
fi

# ---- stop with the device mounted: handed over, not deleted; start takes it over ----
timed stop
check "systemctl stop with a device mounted returns promptly, exit 0, and leaves the device for the next daemon" \
	eval '[ $rc -eq 0 ] && [ $secs -lt 60 ] && [ -b "$FSDEV" ] && [ -e "$CKDIR/device-fs.ublk" ]'
$BIN status > "$ART/admin-status-stopped.txt" 2>&1
check "status says the daemon is not running" grep -q "not running" "$ART/admin-status-stopped.txt"
timed start
wait_dev fs
check "systemctl start takes it over: same node, the file system writable" eval \
	'[ $rc -eq 0 ] && [ "$(dst fs path)" = "$FSDEV" ] &&
	 head -c $MiB /dev/urandom > "$M/after-stop" && sync "$M/after-stop"'
umount "$M"
check "after the reloads, restarts and the stop: fsck -f clean, no fs error" eval \
	'fsck.ext4 -f -n "$FSDEV" > "$ART/admin-fsck.log" 2>&1 && fs_clean "$FSDEV"'
timed stop
for i in $(seq 50); do [ ! -e "$FSDEV" ] && [ ! -e "$CKDIR/device-fs.ublk" ] && break; sleep 0.2; done
check "unmounted, the device goes with the daemon: no node, no recovery id" eval \
	'[ $rc -eq 0 ] && [ ! -e "$FSDEV" ] && [ ! -e "$CKDIR/device-fs.ublk" ]'

# ---- kill -9, then stop: nothing left behind ----
sysconf "$OTHER"
systemctl start $U
wait_dev other
OTH=$(dst other path)
systemctl kill -s KILL $U
timed stop
# iou-offloadd-release.service deletes them once systemd has stopped the unit
gone() { [ ! -e "$OTH" ] && [ ! -e "$CKDIR/device-other.ublk" ] && [ -z "$(ls /sys/class/ublk-char 2>/dev/null)" ]; }
for i in $(seq 50); do gone && break; sleep 0.2; done
check "kill -9 then systemctl stop: the device is gone, and its recovery id" gone
journalctl -u iou-offloadd-release --no-pager --since "@$SINCE" > "$ART/admin-release.log" 2>&1
$BIN status > "$ART/admin-status-killed.txt" 2>&1
check "status says the daemon is not running" grep -q "not running" "$ART/admin-status-killed.txt"

# ---- a new mirror over legs that differ: synced before a read can differ ----
head -c $((8 * MiB)) /dev/urandom > "$T/na0"
head -c $((8 * MiB)) /dev/urandom > "$T/na1"
cp "$T/na0" "$T/na0.orig"
sysconf "[device fresh]
	target = mirror
	engine = uring
	backing = $T/na0
	backing = $T/na1"
systemctl start $U
wait_dev fresh
FR=$(dst fresh path)
same_reads=1
first=$(dd if="$FR" bs=4k skip=100 count=1 iflag=direct status=none | sha256sum)
for i in 1 2 3 4 5 6; do
	[ "$(dd if="$FR" bs=4k skip=100 count=1 iflag=direct status=none | sha256sum)" = "$first" ] || same_reads=0
done
check "a new mirror: six rereads of one 4K block give the same bytes (round-robin over legs that differed)" \
	[ $same_reads = 1 ]
check "and they are the first leg's bytes" eval \
	'[ "$first" = "$(dd if="$T/na0.orig" bs=4k skip=100 count=1 status=none | sha256sum)" ]'
for i in $(seq 100); do [ "$(dst fresh state)" = running ] && break; sleep 0.2; done
check "the new mirror is synced: state running, the second leg now holds the first leg's bytes" eval \
	'[ "$(dst fresh state)" = running ] && cmp -s "$T/na0.orig" "$T/na1" && cmp -s "$T/na0" "$T/na1"'
check "blkdiscard on the mirror punches both legs alike" eval \
	'blkdiscard -o $((2 * MiB)) -l $((2 * MiB)) "$FR" && cmp -s "$T/na0" "$T/na1" &&
	 cmp -s <(dd if="$T/na1" bs=1M skip=2 count=2 status=none) <(head -c $((2 * MiB)) /dev/zero)'
check "the journal says the second leg was not synced yet, then resynced" eval \
	'jrnl | grep -q "device fresh: member $T/na1 is not synced yet" &&
	 jrnl | grep -q "device fresh: member $T/na1 resynced from $T/na0"'
systemctl stop $U

# ---- a mirror remembers its stale leg across kill -9 and restart ----
# leg B is a dm device over a loop device: its table turns to error, then back
truncate -s $((16 * MiB)) "$T/sa" "$T/sb"
LSB=$(losetup -f --show "$T/sb")
SECT=$(blockdev --getsz "$LSB")
dmsetup create iou-admin-b --table "0 $SECT linear $LSB 0"
DB=/dev/mapper/iou-admin-b
# a leg's bytes: a block device past its page cache (the daemon writes it O_DIRECT)
leg() { case $1 in /dev/*) dd if="$1" bs=1M iflag=direct status=none ;; *) cat "$1" ;; esac; }
leg_fail() { dmsetup suspend iou-admin-b && dmsetup load iou-admin-b --table "0 $SECT error" && dmsetup resume iou-admin-b; }
leg_back() { dmsetup suspend iou-admin-b && dmsetup load iou-admin-b --table "0 $SECT linear $LSB 0" && dmsetup resume iou-admin-b; }
# $1: how the daemon goes away (kill or restart), $2: read_policy, $3 $4: the legs in order
stale_case() {
	local how=$1 policy=$2 first=$3 second=$4 dev bad=0 i
	sysconf "[device st]
	target = mirror
	engine = uring
	read_policy = $policy
	backing = $first
	backing = $second"
	rm -f "$CKDIR/device-st.mirror"
	systemctl start $U
	wait_dev st
	for i in $(seq 100); do [ "$(dst st state)" = running ] && break; sleep 0.2; done
	dev=$(dst st path)
	head -c $((16 * MiB)) /dev/urandom > "$T/old"
	dd if="$T/old" of="$dev" bs=1M oflag=direct status=none
	leg_fail
	head -c $((16 * MiB)) /dev/urandom > "$T/new"
	dd if="$T/new" of="$dev" bs=1M oflag=direct status=none
	sleep 1.2
	[ "$(dst st state)" = degraded ] || bad=1
	$BIN status > "$ART/admin-status-stale-$how.txt" 2>&1
	leg_back
	if [ $how = kill ]; then
		systemctl kill -s KILL $U
		for i in $(seq 100); do systemctl is-active -q $U && [ -n "$(dst st path)" ] &&
			[ "$(systemctl show -p NRestarts --value $U)" != "$NRK" ] && break; sleep 0.2; done
	else
		systemctl restart $U
	fi
	wait_dev st
	check "$how, read_policy $policy: the device was degraded once the leg failed" [ $bad = 0 ]
	check "$how, read_policy $policy: status named the leg stale, with its failed requests (as mdadm --detail)" \
		grep -q "$DB (stale, [1-9][0-9]* errors)" "$ART/admin-status-stale-$how.txt"
	check "$how, read_policy $policy: after it, the device is the same node" [ "$(dst st path)" = "$dev" ]
	bad=0
	for i in 0 3 5 7 8 10 13 15; do
		cmp -s <(dd if="$dev" bs=1M skip=$i count=1 iflag=direct status=none) \
			<(dd if="$T/new" bs=1M skip=$i count=1 status=none) || bad=$((bad + 1))
	done
	check "$how, read_policy $policy: 8 of 8 1M reads return the last write, none the stale leg's bytes ($bad stale)" [ $bad = 0 ]
	for i in $(seq 150); do [ "$(dst st state)" = running ] && break; sleep 0.2; done
	check "$how, read_policy $policy: the stale leg is resynced: both legs hold the last write" eval \
		'[ "$(dst st state)" = running ] && cmp -s "$T/new" <(leg "$first") && cmp -s "$T/new" <(leg "$second")'
	systemctl stop $U
}
NRK=$(restarts)
stale_case kill round-robin "$T/sa" "$DB"
stale_case restart primary "$DB" "$T/sa"
check "the journal says the stale leg was recorded and resynced" eval \
	'jrnl | grep -q "device st: member $DB is stale (recorded when it failed)" &&
	 jrnl | grep -q "device st: member $DB resynced from $T/sa"'
dmsetup remove iou-admin-b
losetup -d "$LSB"

# ---- a resync under fio verify, two queues: the copy's window and the writes stay apart ----
truncate -s $((128 * MiB)) "$T/ra" "$T/rb"
LRB=$(losetup -f --show "$T/rb")
RSECT=$(blockdev --getsz "$LRB")
dmsetup create iou-admin-r --table "0 $RSECT linear $LRB 0"
DR=/dev/mapper/iou-admin-r
sysconf "[device busy]
	target = mirror
	engine = uring
	nr_queues = 2
	backing = $T/ra
	backing = $DR"
systemctl start $U
wait_dev busy
for i in $(seq 300); do [ "$(dst busy state)" = running ] && break; sleep 0.2; done
BD=$(dst busy path)
fio --name=resync --filename="$BD" --ioengine=io_uring --direct=1 --rw=randwrite --bsrange=4k-128k \
	--iodepth=16 --size=64M --rate=6m --verify=crc32c --verify_fatal=1 --do_verify=1 \
	> "$ART/admin-fio-resync.log" 2>&1 &
FIO=$!
sleep 2
dmsetup suspend iou-admin-r && dmsetup load iou-admin-r --table "0 $RSECT error" && dmsetup resume iou-admin-r
sleep 2
dmsetup suspend iou-admin-r && dmsetup load iou-admin-r --table "0 $RSECT linear $LRB 0" && dmsetup resume iou-admin-r
sleep 1
note "before the reload: $(dst busy state), $(dst busy error)"
timed reload
check "the reload that starts the resync succeeds, and fio is still writing as it starts" eval \
	'[ $rc -eq 0 ] && kill -0 $FIO && [ $(jrnl | grep -c "device busy: resyncing member $DR") -ge 2 ]'
wait $FIO; frc=$?
if [ $frc -eq 0 ] && grep -q "err= 0" "$ART/admin-fio-resync.log" && ! grep -q "verify: bad" "$ART/admin-fio-resync.log"; then
	ok "fio verify=crc32c across a leg's failure and its resync: no I/O error, verify passed"
else
	nok "fio verify=crc32c across a leg's failure and its resync: no I/O error, verify passed (exit $frc)" \
		"$ART/admin-fio-resync.log"
fi
for i in $(seq 300); do [ "$(dst busy state)" = running ] && break; sleep 0.2; done
check "after the resync under load the legs are identical, byte for byte" eval \
	'[ "$(dst busy state)" = running ] && cmp -s "$T/ra" <(leg "$DR")'
systemctl stop $U
for i in $(seq 50); do [ ! -e "$BD" ] && break; sleep 0.2; done
dmsetup remove iou-admin-r
losetup -d "$LRB"

# ---- what md and dm users expect: names, I/O hints, FUA, the layout in status ----
truncate -s $((8 * MiB)) "$T/h0" "$T/h1"
sysconf "[device striped]
	target = stripe
	engine = uring
	stripe_unit = 64K
	backing = $T/h0
	backing = $T/h1"
systemctl start $U
wait_dev striped
SD=$(dst striped path)
udevadm settle
check "udev names the device after its section: /dev/iou/striped -> $SD" \
	eval '[ "$(readlink -f /dev/iou/striped)" = "$SD" ]'
Q=/sys/block/${SD##*/}/queue
note "minimum_io_size $(cat $Q/minimum_io_size) optimal_io_size $(cat $Q/optimal_io_size) fua $(cat $Q/fua) write_cache $(cat $Q/write_cache)"
check "a stripe's I/O hints are dm-stripe's: minimum_io_size the unit, optimal_io_size a full stripe" \
	eval '[ "$(cat $Q/minimum_io_size)" = 65536 ] && [ "$(cat $Q/optimal_io_size)" = 131072 ]'
check "the device takes FUA (a volatile cache with FUA: an O_SYNC write needs no flush)" \
	eval '[ "$(cat $Q/fua)" = 1 ] && [ "$(cat $Q/write_cache)" = "write back" ]'
fio --name=fua --filename="$SD" --ioengine=io_uring --direct=1 --sync=1 --rw=randwrite --bs=16k \
	--iodepth=4 --size=2M --verify=crc32c --verify_fatal=1 --do_verify=1 > "$ART/admin-fio-fua.log" 2>&1
check "O_SYNC (FUA) writes verify" eval 'grep -q "err= 0" "$ART/admin-fio-fua.log" && ! grep -q "verify: bad" "$ART/admin-fio-fua.log"'
dd if=/dev/urandom of="$SD" bs=1M count=16 oflag=direct status=none && sync
blocks() { echo $(( $(stat -c %b "$T/h0") + $(stat -c %b "$T/h1") )); }
B0=$(blocks)
check "the stripe passes discard on (discard_max_bytes $(cat $Q/discard_max_bytes)): blkdiscard of 8M succeeds" \
	eval '[ "$(cat $Q/discard_max_bytes)" -gt 0 ] && blkdiscard -o 0 -l $((8 * MiB)) "$SD"'
B1=$(blocks)
check "the discarded range is punched out of the members ($B0 -> $B1 blocks) and reads back as zeroes" eval \
	'[ $B1 -lt $B0 ] && cmp -s <(dd if="$SD" bs=1M count=8 iflag=direct status=none) <(head -c $((8 * MiB)) /dev/zero)'
$BIN status > "$ART/admin-status-layout.txt" 2>&1
check "status lists the members in order and the layout, as dmsetup table does" \
	grep -q "members $T/h0, $T/h1; stripe_unit 65536" "$ART/admin-status-layout.txt"
systemctl stop $U
for i in $(seq 50); do [ ! -e "$SD" ] && break; sleep 0.2; done
udevadm settle
check "and the name goes with the device" eval '[ ! -e "$SD" ] && [ ! -e /dev/iou/striped ]'

# ---- a reload the service cannot see: refused, and systemctl reload says so ----
sysconf "$OTHER"
systemctl start $U
wait_dev other
truncate -s $((8 * MiB)) /tmp/iou-admin-private
sysconf "$OTHER
	[device intmp]
	target = linear
	engine = uring
	backing = /tmp/iou-admin-private
	[device new]
	target = linear
	engine = uring
	backing = $T/n0"
$BIN --check-config /etc/iou-offloadd.conf > "$ART/admin-check-tmp.txt" 2>&1; crc=$?
note "--check-config from a shell (the host's /tmp): exit $crc"
check "--check-config from a shell warns that the service does not see the file (PrivateTmp), with file:line" \
	grep -q "^/etc/iou-offloadd.conf:[0-9]*: \[device intmp\]: backing = '/tmp/iou-admin-private': under /tmp, which iou-offloadd.service makes private" \
	"$ART/admin-check-tmp.txt"
timed reload
check "systemctl reload fails when the service cannot see a backing (PrivateTmp=yes)" eval \
	'[ $rc -ne 0 ] && [ $rc -ne 124 ]'
check "and says which file and why" eval \
	'jrnl | grep -q "backing = ./tmp/iou-admin-private.: does not exist"'
check "nothing of that edit was applied, the running devices are untouched" eval \
	'[ -z "$(dst new path)" ] && [ -b "$(dst other path)" ] && systemctl is-active -q $U'
systemctl stop $U
rm -f /tmp/iou-admin-private

journalctl -u $U --no-pager --since "@$SINCE" > "$ART/admin-journal.log" 2>&1
rm -f "$DROPIN"
systemctl daemon-reload
rm -rf "$T"
plan
summary
tap_status
