# Sourced by the scripts: where things live. Heavy products stay out of the repo.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_ROOT=${BUILD_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/iou-offload}
KCONFIG=${KCONFIG:-guest}
KSRC=$BUILD_ROOT/linux
KOBJ=$BUILD_ROOT/obj-$KCONFIG
KHDR=$BUILD_ROOT/headers-$KCONFIG
TOOLS=$BUILD_ROOT/tools
# Same CC string and hashing rules everywhere, so ccache hits across build dirs
export CCACHE_DIR=${CCACHE_DIR:-$BUILD_ROOT/ccache}
export CCACHE_BASEDIR=$BUILD_ROOT
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
export KBUILD_BUILD_USER=iou-offload KBUILD_BUILD_HOST=build
# LOCALVERSION= (set, empty) keeps setlocalversion from appending "+" for a git tree
KMAKE=(make -s -C "$KSRC" O="$KOBJ" CC="ccache gcc" HOSTCC="ccache gcc" LOCALVERSION= -j"$(nproc)")

die() { echo "error: $*" >&2; exit 1; }
# the closing "N passed, N failed, N skipped" line of a run's output FILE
summary_of() { grep -aoE '[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" | tail -1; }
log() { echo ">> $*"; }
hash_files() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }
# suite_dir NAME: NN-NAME, a guest suite's directory (numbers: tests/vm/suites.list)
suite_dir() {
	local d
	d=$(awk -v n="$1" '$2 == n && $1 ~ /^[0-9][0-9]$/ { print $1 "-" $2 }' "$REPO/tests/vm/suites.list")
	[ -n "$d" ] || die "suite $1 is not in tests/vm/suites.list"
	echo "$d"
}
