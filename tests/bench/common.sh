# Sourced by bench.sh, scale.sh and profile.sh; brings the TAP helpers every
# shell suite shares (tests/lib/tap.sh: ../lib installed, ../lib from
# tests/bench in the source tree too).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

# cmdline_knobs PREFIX: every
# iou.PREFIX_name=a,b on the guest's kernel command line becomes the
# exported variable PREFIX_NAME="a b", which is how run-bench.sh passes the
# host's BENCH_*, SCALE_* and PROFILE_* settings through the boot.
cmdline_knobs() {
	local prefix=$1 cmdline arg k v
	read -r cmdline < /proc/cmdline
	for arg in $cmdline; do
		case "$arg" in
		iou."$prefix"_*=*)
			k=${arg%%=*}; k=${k#iou."$prefix"_}; v=${arg#*=}
			k=$(tr a-z A-Z <<<"${prefix}_$k")
			printf -v "$k" '%s' "${v//,/ }"
			export "${k?}" ;;
		esac
	done
}

# daemon_section DIR ENGINE QD BS: the [daemon] lines every benchmark run's
# config starts with (state in DIR, quiet, exits when its pipelines end)
daemon_section() {
	echo "[daemon]"
	echo "state_dir = $1"
	echo "runtime_dir = $1"
	echo "log_level = notice"
	echo "exit_when_done = yes"
	echo "engine = $2"
	echo "queue_depth = $3"
	echo "block_size = $4"
}

# The benchmarks' transforms: copy, mirror, stripe (one unit per member and
# block: nothing to shuffle), stripe-multi and stripe-perunit (four units per
# member and block, gathered into one write per member or written one by
# one), and destripe, destripe-multi, destripe-perunit: the same layouts read
# back from the members into one stream.
# stripe_unit TRANSFORM BS: its stripe_unit, or nothing
stripe_unit() {
	case "$1" in
	stripe|destripe) echo $(($2 / 4)) ;;
	*-multi|*-perunit) echo $(($2 / 16)) ;;
	esac
}

# transform_keys TRANSFORM: its [pipeline] keys (transform, gather, stripe_io;
# TRANSFORM-sum: checksum = crc32c)
transform_keys() {
	case "$1" in
	destripe*) echo "transform = gather"; echo "gather = destripe" ;;
	*) echo "transform = ${1%-*}" ;;
	esac
	case "$1" in
	*-multi) echo "stripe_io = gather" ;;
	*-perunit) echo "stripe_io = per-unit" ;;
	*-sum) echo "checksum = crc32c" ;;
	esac
}

# size_bytes SIZE: 64K, 1M, 16G (or GiB, MB, ...) in bytes
size_bytes() {
	local v=${1%B}; v=${v%i}
	case "$v" in
	*K) echo $((${v%K} << 10)) ;;
	*M) echo $((${v%M} << 20)) ;;
	*G) echo $((${v%G} << 30)) ;;
	*) echo "$v" ;;
	esac
}

# kv KEY LINE: the value of KEY=value in LINE (benchtool run's output), -1 if none
kv() { local k=$1 line=$2 x; for x in $line; do [ "${x%%=*}" = "$k" ] && { echo "${x#*=}"; return; }; done; echo -1; }
