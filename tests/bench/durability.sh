#!/bin/bash
# make bench-durability: what the daemon's checkpoints cost, on the host's own
# kernel and file system (engine = uring; nothing is loaded into the kernel).
#
# One file of DUR_MB MiB (default 512) is copied to a new file on the file
# system of DUR_DIR (default $BUILD_ROOT/bench-durability), every copy ending
# with its data on disk:
#   default   iou-offloadd --once with the shipped defaults (checkpoint every
#             64M and every 5 s)
#   ckpt-1G   the same with checkpoint_interval = 1G: one flush, at the end
#   dd        dd bs=1M conv=fdatasync
#   cp        cp, then sync -f on the copy
# each under two loads: quiet, and with a load this script starts itself
# (DUR_LOAD_CPUS CPU burners plus a dd writing and fdatasync'ing another file
# over and over on the same file system). Runs alternate (round r runs every
# mover once) so drift hits all alike; the source stays in the page cache.
# DUR_BASE=DAEMON adds a mover "base": that other build of the daemon with
# the shipped defaults, so a change is timed side by side with what it
# replaces, in the same rounds.
# Prints TAP (each run copied every byte) and a table of median wall seconds
# with the ratios the targets are stated in: default / ckpt-1G, default / dd
# (and default / base).
# DUR_JSON=FILE also writes every wall time and the medians there (bench.sh
# host runs this script for make bench's host baseline).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/../../scripts/common.sh"

DUR_MB=${DUR_MB:-512}
DUR_RUNS=${DUR_RUNS:-5}
DUR_DIR=${DUR_DIR:-$BUILD_ROOT/bench-durability}
DUR_LOAD_CPUS=${DUR_LOAD_CPUS:-$(nproc)}
DUR_LOADS=${DUR_LOADS:-quiet load}
DUR_MOVERS=${DUR_MOVERS:-default ckpt-1G dd cp${DUR_BASE:+ base}}
daemon=${DAEMON:-$REPO/daemon/iou-offloadd}
export IOU_OFFLOADD_NO_BPF=1	# the daemon never probes or loads BPF on the host

[ -x "$daemon" ] || die "no daemon at $daemon (make daemon)"
[ -z "${DUR_BASE:-}" ] || [ -x "$DUR_BASE" ] || die "DUR_BASE: no daemon at $DUR_BASE"
mkdir -p "$DUR_DIR"
W=$(mktemp -d "$DUR_DIR/run.XXXXXX")
load_pids=()
stop_load() {
	[ ${#load_pids[@]} -gt 0 ] && kill "${load_pids[@]}" 2>/dev/null && wait "${load_pids[@]}" 2>/dev/null
	load_pids=()
}
trap 'stop_load; rm -rf "$W"' EXIT

start_load() {
	local i
	for i in $(seq "$DUR_LOAD_CPUS"); do
		(exec sha256sum /dev/zero) & load_pids+=($!)
	done
	# a writer that keeps the disk and the journal busy
	(while :; do dd if=/dev/zero of="$W/load" bs=1M count=256 conv=fdatasync status=none; done) &
	load_pids+=($!)
}

head -c $((DUR_MB << 20)) /dev/urandom > "$W/src"
cat "$W/src" > /dev/null
conf() {	# conf FILE INTERVAL
	{
		echo "[daemon]"
		echo "state_dir = $W/state"
		echo "runtime_dir = $W/state"
		echo "log_level = notice"
		echo "engine = uring"
		[ -n "$2" ] && echo "checkpoint_interval = $2"
		echo "[pipeline p]"
		echo "transform = copy"
		echo "source = $W/src"
		echo "destination = $W/dst"
	} > "$1"
}
conf "$W/default.conf" ""
conf "$W/ckpt-1G.conf" 1G
conf "$W/base.conf" ""

# run MOVER: copy src to a fresh dst; prints the wall seconds
run() {
	local t0 t1 rc
	rm -rf "$W/dst" "$W/state"
	sync -f "$W/src"
	t0=$(date +%s%N)
	case "$1" in
	default|ckpt-1G) "$daemon" --config="$W/$1.conf" --once > "$W/$1.log" 2>&1 ;;
	base) "$DUR_BASE" --config="$W/base.conf" --once > "$W/base.log" 2>&1 ;;
	dd) dd if="$W/src" of="$W/dst" bs=1M conv=fdatasync status=none ;;
	cp) cp "$W/src" "$W/dst" && sync -f "$W/dst" ;;
	esac
	rc=$?
	t1=$(date +%s%N)
	[ $rc -eq 0 ] && cmp -s "$W/src" "$W/dst" || return 1
	echo $(( (t1 - t0) / 1000 ))
}

declare -A times
for load in $DUR_LOADS; do
	[ "$load" = load ] && start_load
	for r in $(seq "$DUR_RUNS"); do
		for m in $DUR_MOVERS; do
			if us=$(run "$m"); then
				times[$load/$m]+=" $us"
				ok "durability: $load: $m copied $DUR_MB MiB byte for byte (round $r: $((us / 1000)) ms)"
			else
				nok "durability: $load: $m copied $DUR_MB MiB byte for byte (round $r)"
			fi
		done
	done
	stop_load
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print 0 }'; }
echo "# $DUR_MB MiB on $(findmnt -no FSTYPE -T "$W") ($DUR_DIR), $(uname -r), $(nproc) CPUs, $DUR_RUNS rounds; median wall s (min-max)"
printf '# %-6s' load; for m in $DUR_MOVERS; do printf ' %16s' "$m"; done
printf ' %16s %16s' "default/ckpt-1G" "default/dd"
[ -n "${DUR_BASE:-}" ] && printf ' %16s' "default/base"
echo
for load in $DUR_LOADS; do
	printf '# %-6s' "$load"
	declare -A med=()
	for m in $DUR_MOVERS; do
		v=${times[$load/$m]:-}
		med[$m]=$(median <<< "$v")
		lo=$(tr ' ' '\n' <<< "$v" | grep . | sort -n | head -1)
		hi=$(tr ' ' '\n' <<< "$v" | grep . | sort -n | tail -1)
		printf ' %6.3f (%.2f-%.2f)' "$(bc -l <<< "${med[$m]} / 1000000")" \
			"$(bc -l <<< "${lo:-0} / 1000000")" "$(bc -l <<< "${hi:-0} / 1000000")"
	done
	ratio() { [ "${med[$2]:-0}" -gt 0 ] && printf '%.3f' "$(bc -l <<< "${med[$1]:-0} / ${med[$2]}")" || echo -; }
	printf ' %16s %16s' "$(ratio default ckpt-1G)" "$(ratio default dd)"
	[ -n "${DUR_BASE:-}" ] && printf ' %16s' "$(ratio default base)"
	echo
	unset med
done
# the same ratios round by round (both ran in the same round, so drift
# between rounds cancels): median (min-max) of default / each other mover
paired() {	# paired LOAD MOVER
	local a=(${times[$1/default]:-}) b=(${times[$1/$2]:-}) i
	for i in "${!a[@]}"; do
		[ -n "${b[$i]:-}" ] && bc -l <<< "${a[$i]} / ${b[$i]}"
	done | sort -n | awk '{ a[NR] = $1 } END { if (NR) printf "%.3f (%.2f-%.2f)", a[int((NR + 1) / 2)], a[1], a[NR]; else printf "-" }'
}
for load in $DUR_LOADS; do
	printf '# %-6s round by round:' "$load"
	for m in $DUR_MOVERS; do
		[ "$m" = default ] || printf ' default/%s %s;' "$m" "$(paired "$load" "$m")"
	done
	echo
done
if [ -n "${DUR_JSON:-}" ]; then
	{
		printf '{"mb":%s,"runs":%s,"fs":"%s","kernel":"%s","cpus":%s,"load_cpus":%s,"times_s":{' \
			"$DUR_MB" "$DUR_RUNS" "$(findmnt -no FSTYPE -T "$W")" "$(uname -r)" "$(nproc)" "$DUR_LOAD_CPUS"
		sep=""
		for load in $DUR_LOADS; do
			for m in $DUR_MOVERS; do
				printf '%s"%s/%s":[%s]' "$sep" "$load" "$m" \
					"$(for us in ${times[$load/$m]:-}; do printf '%s\n' "$(bc -l <<< "scale=6; $us / 1000000")"; done | sed 's/^\./0./' | paste -sd,)"
				sep=","
			done
		done
		printf '}}\n'
	} > "$DUR_JSON"
fi
plan
summary
tap_status
