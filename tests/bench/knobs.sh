# Sourced by bench.sh, scale.sh and profile.sh. cmdline_knobs PREFIX: every
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
