# Sourced by bench.sh, scale.sh and profile.sh.

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
