# Helpers for the guest suites that drive iou-offloadd (daemon, loop, demo,
# and the reliability suites through faults/common.sh); sourced after
# tap.sh, never run. POSIX sh (the demo suite runs under /bin/sh).
#
#   sum FILE                  its sha256
#   same A B                  both exist and are byte-identical (sha256)
#   flip FILE OFFSET          16 bytes there inverted (changed whatever they were), synced
#   st FILE PIPELINE KEY      KEY of PIPELINE in status file FILE ("" if none)
#   ck FILE KEY               KEY of a checkpoint file (state, done, total)
#   dst DEVICE KEY            KEY of [device DEVICE] in the status file ("" if none)
#   sysconf BODY              /etc/iou-offloadd.conf for the systemd unit:
#                             [daemon], then $SYSCONF_DAEMON, then BODY
#   wait_state P STATE SECS [STATUSFILE]    until pipeline P is in STATE
#   wait_bytes P BYTES SECS [STATUSFILE]    until P has done BYTES
#   once_conf NAME ENGINE BODY  $T/NAME.conf for an --once run outside
#                             systemd, own state and runtime dirs; BODY may
#                             override the [daemon] defaults
#   run_once NAME             iou-offloadd --once on it, log ($LOGLEVEL,
#                             default info) in $ART/NAME.log
#
# Installed as /usr/lib/iou-offload/tests/lib/daemon.sh (tests/lib/Makefile).
ART=${IOU_ARTIFACTS:-/tmp/iou-artifacts}
mkdir -p "$ART"
BIN=${IOU_BIN:-/usr/sbin/iou-offloadd}
STATUS=/run/iou-offload/status
CKDIR=/var/lib/iou-offload
# the [daemon] keys sysconf writes before its BODY (one per line)
SYSCONF_DAEMON="engine = bpf"

sum() { sha256sum "$1" | cut -d' ' -f1; }
same() { [ -f "$1" ] && [ -f "$2" ] && [ "$(sum "$1")" = "$(sum "$2")" ]; }
flip() {
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
off = int(sys.argv[2])
b = os.pread(fd, 16, off)
os.pwrite(fd, bytes(x ^ 0xFF for x in b), off)
os.fsync(fd)' "$1" "$2"
}

st() {
	awk -v p="$2" -v k="$3" -F= '
		$1 == "pipeline" { cur = $2 }
		cur == p && $1 == k { v = substr($0, length(k) + 2) }
		END { print v }' "$1" 2>/dev/null
}
ck() { sed -n "s/^$2=//p" "$1" 2>/dev/null; }
dst() {
	awk -v d="$1" -v k="dev_$2" -F= '
		$1 == "device" { cur = $2 }
		cur == d && $1 == k { v = substr($0, length(k) + 2) }
		END { print v }' "$STATUS" 2>/dev/null
}

# no leading blanks in what is written: inih would read them as
# continuation lines
sysconf() {
	sed 's/^[[:space:]]*//' > /etc/iou-offloadd.conf <<-EOF
	[daemon]
	$SYSCONF_DAEMON
	$1
	EOF
}
wait_state() {
	local f=${4:-$STATUS} i
	for i in $(seq $(($3 * 5))); do
		[ "$(st "$f" "$1" state)" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
wait_bytes() {
	local f=${4:-$STATUS} i
	for i in $(seq $(($3 * 10))); do
		[ "$(st "$f" "$1" bytes_done || echo 0)" -ge "$2" ] 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

once_conf() {
	local name=$1 engine=$2 body=$3
	mkdir -p "$T/$name/state" "$T/$name/run"
	sed 's/^[[:space:]]*//' > "$T/$name.conf" <<-EOF
	[daemon]
	state_dir = $T/$name/state
	runtime_dir = $T/$name/run
	engine = $engine
	queue_depth = 8
	block_size = 1M
	[pipeline $name]
	$body
	EOF
}
run_once() {
	"$BIN" -c "$T/$1.conf" --once -l "${LOGLEVEL:-info}" > "$ART/$1.log" 2>&1
}
