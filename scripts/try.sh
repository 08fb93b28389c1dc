#!/usr/bin/env bash
# make try: the daemon on this machine, no kernel and no guest. Builds
# iou-offloadd without BPF (the uring engine, which any kernel runs; the same
# sources as `make -C daemon BPF=0`, built beside the unit tests so that the
# in-tree daemon a guest image installs is left alone),
# makes the input files the shipped examples name under /tmp/iou-offload-demo,
# runs every example as written with --once, and checks each result byte for
# byte. Loads nothing into the kernel. Prints TAP and "N passed, N failed, N
# skipped"; exits non-zero if any example did not do what it says.
set -uo pipefail
. "$(dirname "$0")/common.sh"

D=/tmp/iou-offload-demo
BIN=$REPO/tests/unit/build/default/iou-offloadd
EX=$REPO/config/examples

make -s -C "$REPO/tests/unit" build >/dev/null || die "cannot build the daemon (make -C tests/unit build)"
rm -rf "$D"
mkdir -p "$D"/{backup,parts,members,a,b,c,mirror-a,mirror-b,logs}
# checkpoints and the status file stay in the demo directory (as systemd's
# StateDirectory= would pass them), not in /var/lib or /run
export STATE_DIRECTORY=$D/state RUNTIME_DIRECTORY=$D/run

rnd() { head -c "$2" /dev/urandom > "$1"; }
rnd "$D/db.dump" $((24 << 20))
rnd "$D/golden.img" $((8 << 20))
rnd "$D/disk.img" $((64 << 20))
rnd "$D/vm.img" $((4 << 20))
for i in 0 1 2; do rnd "$D/parts/archive.00$i" $(((5 << 20) + 123 * (i + 1))); done
rnd "$D/archive.tar" $((20 << 20))
cp "$D/archive.tar" "$D/archive.before"

. "$REPO/tests/lib/tap.sh"

# run EXAMPLE WHAT CHECK...: --once must exit 0 and CHECK must hold
run() {
	local ex=$1 what=$2 log=$D/logs/${1%.conf}.log
	shift 2
	if "$BIN" -c "$EX/$ex" --once > "$log" 2>&1 && "$@" >> "$log" 2>&1; then
		ok "$ex: $what"
	else
		nok "$ex: $what" "$log"
	fi
}
same() { cmp "$1" "$2"; }
all_same() { local a=$1; shift; for b; do cmp "$a" "$b" || return 1; done; }
concat_ok() {
	cat "$D"/parts/archive.00* > "$D/parts.cat"
	local len
	len=$(stat -c %s "$D/parts.cat")
	cmp -n $((1 << 20)) "$D/archive.tar" "$D/archive.before" &&
		cmp -i $((1 << 20)):0 -n "$len" "$D/archive.tar" "$D/parts.cat" &&
		cmp -i $(((1 << 20) + len)) "$D/archive.tar" "$D/archive.before"
}
extract_ok() {
	dd if="$D/disk.img" of="$D/extract.want" bs=1M skip=32 count=16 status=none &&
		cmp "$D/extract.bin" "$D/extract.want"
}
restored_ok() { cmp "$D/restored.img" "$D/disk.img"; }

run copy.conf "one file to another, byte for byte" same "$D/db.dump" "$D/backup/db.dump"
run mirror.conf "three identical copies" all_same "$D/golden.img" "$D"/{a,b,c}/golden.img
run stripe-raid0.conf "striped over four members" test -s "$D/members/vde"
run gather-destripe.conf "the four members read back into the image" restored_ok
run gather-concat.conf "three parts joined at 1 MiB, the rest of the file kept" concat_ok
run offsets.conf "16 MiB from 32 MiB into the disk image" extract_ok
# the in-kernel loop needs the patched kernel: where it is missing, the
# example must fail with that reason and write nothing, not pretend
log=$D/logs/loop-mirror.log
if "$BIN" -c "$EX/loop-mirror.conf" --once > "$log" 2>&1; then
	if all_same "$D/vm.img" "$D"/mirror-{a,b}/vm.img >> "$log" 2>&1; then
		ok "loop-mirror.conf: two mirrors, loop engine"
	else
		nok "loop-mirror.conf: two mirrors, loop engine" "$log"
	fi
elif grep -q "engine = loop is not available" "$log" && ! ls "$D"/mirror-a/vm.img >/dev/null 2>&1; then
	ok "loop-mirror.conf: refused on this kernel or build, saying why, nothing written"
	grep -m1 'engine = loop' "$log" | sed 's/^/#   /'
else
	nok "loop-mirror.conf: fails only for want of the patched kernel" "$log"
fi
plan
note "the files are in $D, the daemon's logs in $D/logs"
summary
tap_status
