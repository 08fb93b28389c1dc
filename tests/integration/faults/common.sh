# Helpers shared by the reliability suites (55-faults, 56-crash, 57-hostile);
# sourced by their `run`. Same TAP helpers and style as 50-daemon.
n=0 failures=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failures=$((failures + 1)); echo "not ok $n - $*"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }
note() { echo "# $*"; }

ART=${IOU_ARTIFACTS:-/tmp/iou-artifacts}
mkdir -p "$ART"
BIN=${IOU_BIN:-/usr/sbin/iou-offloadd}
STATUS=/run/iou-offload/status
CKDIR=/var/lib/iou-offload

sum() { sha256sum "$1" | cut -d' ' -f1; }
same() { [ -f "$1" ] && [ -f "$2" ] && [ "$(sum "$1")" = "$(sum "$2")" ]; }

# field KEY of pipeline NAME in status file FILE
st() {
	awk -v p="$2" -v k="$3" -F= '
		$1 == "pipeline" { cur = $2 }
		cur == p && $1 == k { v = substr($0, length(k) + 2) }
		END { print v }' "$1" 2>/dev/null
}
# a checkpoint's KEY (state, done, total)
ck() { sed -n "s/^$2=//p" "$1" 2>/dev/null; }

# /etc/iou-offloadd.conf for the systemd unit (no leading blanks: inih
# would read them as continuation lines)
sysconf() {
	sed 's/^[[:space:]]*//' > /etc/iou-offloadd.conf <<-EOF2
	[daemon]
	engine = bpf
	$1
	EOF2
}
wait_state() {	# pipeline state timeout [status file]
	local f=${4:-$STATUS}
	for _ in $(seq $(($3 * 5))); do
		[ "$(st "$f" "$1" state)" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
wait_bytes() {	# pipeline bytes timeout [status file]
	local f=${4:-$STATUS}
	for _ in $(seq $(($3 * 10))); do
		[ "$(st "$f" "$1" bytes_done || echo 0)" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# device-mapper: create NAME with TABLE; dmpath NAME prints its node.
# --noudevsync: the guest's udev may not answer cookies; the node is made
# by libdevmapper or udev, whichever comes first.
# A TABLE may have several lines.
dm_create() {
	printf '%s\n' "$2" | dmsetup create --noudevsync "$1" || return 1
	udevadm settle -t 5 2>/dev/null
	return 0
}
dm_swap() {	# NAME TABLE: replace the live table (suspend, load, resume)
	dmsetup suspend --noudevsync "$1" &&
		printf '%s\n' "$2" | dmsetup load --noudevsync "$1" &&
		dmsetup resume --noudevsync "$1"
}
dmpath() {
	if [ -b "/dev/mapper/$1" ]; then echo "/dev/mapper/$1"; return; fi
	echo "/dev/dm-$(dmsetup info -c --noheadings -o minor "$1" | tr -d ' ')"
}
# bytes [0, N) of A and B equal, B read with O_DIRECT (what reached the device)
prefix_same_direct() {	# N A B
	[ "$1" -eq 0 ] && return 0
	cmp -s -n "$1" "$2" <(dd if="$3" iflag=direct bs=64K status=none 2>/dev/null)
}
prefix_same() { [ "$1" -eq 0 ] || cmp -s -n "$1" "$2" "$3"; }
# the offset in an error message: "at offset N" (a failed read or write), or
# for a failed fdatasync, which cannot say which block was lost, "the
# checkpoint stays at N"
err_offset() { sed -n -e 's/.* at offset \([0-9]*\).*/\1/p' -e 's/.*checkpoint stays at \([0-9]*\).*/\1/p' <<< "$1" | head -1; }
