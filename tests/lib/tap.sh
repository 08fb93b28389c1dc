# TAP helpers for every shell test suite (guest suites, make try, the bench
# suites); sourced, never run. POSIX sh: the demo suite runs under /bin/sh.
#
#   ok DESC             ok N - DESC
#   nok DESC [LOG]      not ok N - DESC; LOG (a file), if given, follows as
#                       "#   " diagnostics
#   skip DESC WHY       ok N - DESC # SKIP WHY
#   check DESC CMD...   ok if CMD succeeds, else not ok (CMD's output as is)
#   check_out DESC CMD...  the same, CMD's output (and on failure its exit
#                       status) shown as diagnostics below the test line
#   note TEXT           # TEXT
#   plan [N]            1..N (N: the tests so far when not given)
#   skip_all WHY        1..0 # SKIP WHY, and exit 0
#   summary             N passed, N failed, N skipped (make check sums these)
#   tap_status          0 if no test failed, else 1
#
# Counters: n (tests so far), passed, failed, skipped.
# Installed as /usr/lib/iou-offload/tests/lib/tap.sh (tests/lib/Makefile).
n=0 passed=0 failed=0 skipped=0

ok() { n=$((n + 1)) passed=$((passed + 1)); echo "ok $n - $1"; }
nok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	if [ $# -ge 2 ]; then sed 's/^/#   /' "$2"; fi
	return 0
}
skip() { n=$((n + 1)) skipped=$((skipped + 1)); echo "ok $n - $1 # SKIP $2"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }
check_out() {
	local what=$1 out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$what"
	else
		nok "$what"
		echo "# exit status $rc: $*"
	fi
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /'
	return 0
}
note() { echo "# $*"; }
plan() { echo "1..${1:-$n}"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
summary() { echo "$passed passed, $failed failed, $skipped skipped"; }
tap_status() { [ "$failed" -eq 0 ]; }
