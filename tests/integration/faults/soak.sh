#!/bin/bash
# Guest suite soak (manual; `make soak` runs it on the debug kernel):
# 8 pipelines of mixed transforms and engines under systemd, all with
# `repeat = yes`, for iou.soak_seconds (default 600) while the suite
# reloads, stops and starts, and kill -9s the daemon at random. Every time a
# pipeline is seen finished its destinations are checked against reference
# files made once at the start by the uring engine (userspace copies) and
# cat; at the end a last start must finish every pipeline, identical. The
# runner then checks dmesg (KASAN, lockdep, kmemleak scan).
set -u
cd "$(dirname "$0")" && . ./common.sh

MiB=1048576
S=/srv/iou-offload/soak
SECONDS_SOAK=600
read -r cmdline < /proc/cmdline
for arg in $cmdline; do
	case "$arg" in iou.soak_seconds=*) SECONDS_SOAK=${arg#iou.soak_seconds=} ;; esac
done
systemctl stop iou-offloadd 2>/dev/null
rm -rf "$S" "$CKDIR"/*.ckpt
mkdir -p "$S/ref"
cp /etc/iou-offloadd.conf "$ART/default.conf"
trap 'systemctl stop iou-offloadd 2>/dev/null; cp "$ART/default.conf" /etc/iou-offloadd.conf; rm -rf "$S"' EXIT

for f in a b c d e; do head -c $((16 * MiB)) /dev/urandom > "$S/src-$f"; done
head -c $((12 * MiB + 4096 * 3)) /dev/urandom > "$S/src-odd"	# not a whole block

# references, by other means than the code under test (the uring engine,
# per-unit writes by default where the soak's s1 gathers)
sed 's/^[[:space:]]*//' > "$S/ref.conf" <<-EOF
	[daemon]
	engine = uring
	state_dir = $S/ref/state
	runtime_dir = $S/ref/run
	[pipeline s1]
	transform = stripe
	stripe_unit = 64K
	source = $S/src-c
	destination = $S/ref/s1.0
	destination = $S/ref/s1.1
	[pipeline s2]
	transform = stripe
	stripe_unit = 128K
	source = $S/src-d
	destination = $S/ref/s2.0
	destination = $S/ref/s2.1
	destination = $S/ref/s2.2
	destination = $S/ref/s2.3
	[pipeline members]
	transform = stripe
	stripe_unit = 64K
	source = $S/src-e
	destination = $S/m.0
	destination = $S/m.1
EOF
check "reference stripes made with the uring engine" "$BIN" -c "$S/ref.conf" --once -l warning
cat "$S/src-a" "$S/src-b" > "$S/ref/g1"

# name engine transform keys..., destinations are checked by verify()
sed 's/^[[:space:]]*//' > /etc/iou-offloadd.conf <<-EOF
	[daemon]
	engine = bpf
	repeat = yes
	checkpoint_interval = 2M
	[pipeline c1]
	transform = copy
	block_size = 256K
	queue_depth = 8
	source = $S/src-a
	destination = $S/c1
	[pipeline c2]
	engine = loop
	transform = copy
	direct = yes
	block_size = 64K
	queue_depth = 16
	source = $S/src-odd
	destination = $S/c2
	[pipeline m1]
	transform = mirror
	block_size = 128K
	queue_depth = 4
	source = $S/src-b
	destination = $S/m1.0
	destination = $S/m1.1
	[pipeline m2]
	transform = mirror
	block_size = 1M
	queue_depth = 2
	direct = yes
	source = $S/src-odd
	destination = $S/m2.0
	destination = $S/m2.1
	destination = $S/m2.2
	[pipeline s1]
	transform = stripe
	stripe_unit = 64K
	stripe_io = gather
	block_size = 256K
	queue_depth = 8
	source = $S/src-c
	destination = $S/s1.0
	destination = $S/s1.1
	[pipeline s2]
	transform = stripe
	stripe_unit = 128K
	block_size = 512K
	queue_depth = 4
	direct = yes
	source = $S/src-d
	destination = $S/s2.0
	destination = $S/s2.1
	destination = $S/s2.2
	destination = $S/s2.3
	[pipeline g1]
	transform = gather
	gather = concat
	block_size = 256K
	queue_depth = 8
	source = $S/src-a
	source = $S/src-b
	destination = $S/g1
	[pipeline g2]
	transform = gather
	gather = destripe
	stripe_unit = 64K
	block_size = 128K
	queue_depth = 8
	source = $S/m.0
	source = $S/m.1
	destination = $S/g2
EOF
cp /etc/iou-offloadd.conf "$ART/soak.conf"
check "soak config accepted" "$BIN" --check-config /etc/iou-offloadd.conf

# verify NAME: its destinations against the references
verify() {
	case "$1" in
	c1) same "$S/src-a" "$S/c1" ;;
	c2) same "$S/src-odd" "$S/c2" ;;
	m1) same "$S/src-b" "$S/m1.0" && same "$S/src-b" "$S/m1.1" ;;
	m2) same "$S/src-odd" "$S/m2.0" && same "$S/src-odd" "$S/m2.1" && same "$S/src-odd" "$S/m2.2" ;;
	s1) same "$S/ref/s1.0" "$S/s1.0" && same "$S/ref/s1.1" "$S/s1.1" ;;
	s2) for k in 0 1 2 3; do same "$S/ref/s2.$k" "$S/s2.$k" || return 1; done ;;
	g1) same "$S/ref/g1" "$S/g1" ;;
	g2) same "$S/src-e" "$S/g2" ;;
	esac
}
PIPES="c1 c2 m1 m2 s1 s2 g1 g2"

systemctl start iou-offloadd
check "iou-offloadd started with 8 pipelines" systemctl is-active -q iou-offloadd
RANDOM=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
end=$(($(date +%s) + SECONDS_SOAK))
verified=0 bad=0 reloads=0 restarts=0 kills=0 bytes=0
declare -A seen
while [ "$(date +%s)" -lt "$end" ]; do
	# check every pipeline that is finished now; nothing rewrites it until
	# the next action below
	for p in $PIPES; do
		[ "$(st $STATUS $p state)" = finished ] || continue
		gen="$(st $STATUS $p elapsed)"
		[ "${seen[$p]:-}" = "$gen" ] && continue
		seen[$p]=$gen
		if verify $p; then
			verified=$((verified + 1))
			bytes=$((bytes + $(st $STATUS $p bytes_total)))
		else
			bad=$((bad + 1))
			nok "pipeline $p finished with destinations unlike the reference"
			"$BIN" status > "$ART/bad-$p-status.txt" 2>&1
		fi
	done
	for p in $PIPES; do
		if [ "$(st $STATUS $p state)" = failed ]; then
			bad=$((bad + 1))
			nok "pipeline $p failed: $(st $STATUS $p error)"
		fi
	done
	# the first three rounds do one of each, the rest are drawn
	r=$((RANDOM % 20))
	case $((reloads + restarts + kills)) in
	0) r=0 ;; 1) r=10 ;; 2) r=15 ;;
	esac
	if [ $r -lt 10 ]; then
		systemctl reload iou-offloadd && reloads=$((reloads + 1))
	elif [ $r -lt 15 ]; then
		systemctl stop iou-offloadd
		systemctl start iou-offloadd && restarts=$((restarts + 1))
	elif [ $r -lt 18 ]; then
		pid=$(systemctl show -p MainPID --value iou-offloadd)
		if [ "${pid:-0}" -gt 0 ]; then
			kill -9 "$pid" && kills=$((kills + 1))
			# Restart=on-failure brings it back after RestartSec=2s
			for _ in $(seq 50); do
				systemctl is-active -q iou-offloadd && break
				sleep 0.2
			done
		fi
	fi
	systemctl is-active -q iou-offloadd || { systemctl start iou-offloadd; note "started a daemon that was not active"; }
	sleep $((2 + RANDOM % 7))
done
note "${SECONDS_SOAK} s, $reloads reloads, $restarts stop/starts, $kills kill -9s; $verified finished runs checked identical ($((bytes / MiB)) MiB), $bad bad"
check "no pipeline failed or finished unlike its reference ($verified runs checked, $((bytes / MiB)) MiB)" [ $bad -eq 0 ]
check "every pipeline was seen finished and checked at least once" \
	eval '[ ${#seen[@]} -eq 8 ]'
check "the daemon was reloaded, restarted and killed during the soak" \
	[ $reloads -gt 0 -a $restarts -gt 0 -a $kills -gt 0 ]

# the end: one more start with everything run again, and every byte checked
systemctl stop iou-offloadd
systemctl start iou-offloadd
for p in $PIPES; do
	if wait_state $p finished 900; then
		check "final run: pipeline $p finishes identical" verify $p
	else
		nok "final run: pipeline $p finishes (state $(st $STATUS $p state): $(st $STATUS $p error))"
	fi
done
systemctl stop iou-offloadd
journalctl -u iou-offloadd --no-pager -o cat > "$ART/journal.txt" 2>&1
# (NRestarts starts again from 0 at every manual start: count in the journal)
n_restarts=$(grep -c "Scheduled restart job" "$ART/journal.txt")
check "systemd restarted the daemon after each kill -9 (Restart=on-failure: $n_restarts of $kills)" \
	[ "$n_restarts" -ge "$kills" ]
check "journal: no assertion or crash of the daemon" \
	eval '! grep -qE "Assertion|core dumped|segfault" "$ART/journal.txt" && ! dmesg | grep -q "iou-offloadd.*segfault"'
plan
