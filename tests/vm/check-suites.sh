#!/usr/bin/env bash
# make check: the guest suites' bookkeeping, on the host (nothing is run).
#  - tests/vm/suites.list is the one place suite numbers are given: every
#    entry well formed, no two suites share a number or a name;
#  - every suite is registered: each tests/integration/<dir>/run is suite
#    <dir>, and every suite an install rule names ($(call suite_dir,NAME),
#    `suite_dir NAME`) is in the list; every listed suite is installed by one;
#  - no other file spells a suite's number (NN-name);
#  - every shell suite and helper parses (bash -n; sh -n for /bin/sh ones)
#    and none defines its own TAP helpers (they come from tests/lib/tap.sh).
# Prints TAP and "N passed, N failed, N skipped"; exits non-zero on a failure.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
. "$REPO/tests/lib/tap.sh"
cd "$REPO" || exit 1
LIST=tests/vm/suites.list

entries() { grep -v '^[[:space:]]*\(#\|$\)' "$LIST"; }
well_formed() { entries | awk '$1 !~ /^[0-9][0-9]$/ || $2 !~ /^[a-z0-9][a-z0-9_-]*$/ || NF < 4 { print "bad entry: " $0; bad = 1 } END { exit bad }'; }
unique_numbers() { entries | awk '{ if ($1 in s) { print "number " $1 ": " s[$1] " and " $2; bad = 1 } s[$1] = $2 } END { exit bad }'; }
unique_names() { entries | awk '{ if ($2 in s) { print "name " $2 ": " s[$2] " and " $1; bad = 1 } s[$2] = $1 } END { exit bad }'; }
registered() { entries | awk -v n="$1" '$2 == n { f = 1 } END { exit !f }'; }

# every suite name an install rule asks a number for
referenced() {
	git ls-files -z --cached --others --exclude-standard -- '*Makefile' '*.mk' '*.sh' | xargs -0 grep -ohE '\$\(call suite_(dir|clean),[^)]*\)|\bsuite_dir [a-z0-9_-]+' 2>/dev/null |
		sed -E 's/^\$\(call suite_dir,([^)]*)\)$/\1/; s/^\$\(call suite_clean,[^,]*,([^)]*)\)$/\1/; s/^suite_dir //' |
		grep -E '^[a-z0-9][a-z0-9_-]*$' | sort -u
}
# foreach lists: $(foreach s,a b c,$(call suite_clean,...,$(s)) ...)
referenced_foreach() {
	git ls-files -z --cached --others --exclude-standard -- '*Makefile' '*.mk' | xargs -0 sed -n 's/.*\$(foreach s,\([^,]*\),\$(call suite_clean.*/\1/p' | tr ' ' '\n' | sed '/^$/d' | sort -u
}
dirs_registered() {
	local d bad=0
	for d in tests/integration/*/; do
		d=${d%/}
		[ -e "$d/run" ] || continue
		registered "${d##*/}" || { echo "$d/run: suite ${d##*/} is not in $LIST"; bad=1; }
	done
	return $bad
}
refs_registered() {
	local s bad=0
	for s in $({ referenced; referenced_foreach; } | sort -u); do
		registered "$s" || { echo "an install rule names suite $s, which is not in $LIST"; bad=1; }
	done
	return $bad
}
all_installed() {
	local s bad=0 refs
	refs=$({ referenced; referenced_foreach; } | sort -u)
	for s in $(entries | awk '{ print $2 }'); do
		grep -qx -- "$s" <<<"$refs" || { echo "suite $s: no install rule names it"; bad=1; }
	done
	return $bad
}
no_numbers_elsewhere() {
	local names hits
	names=$(entries | awk '{ print $2 }' | paste -sd'|')
	hits=$(git ls-files -z --cached --others --exclude-standard -- ':!tests/vm/suites.list' ':!*.patch' ':!tests/fuzz/corpus' |
		xargs -0 grep -nE "(^|[^0-9A-Za-z_.-])[0-9]{2}-($names)([^0-9A-Za-z_-]|$)" 2>/dev/null)
	[ -z "$hits" ] && return 0
	echo "$hits"
	return 1
}

shell_files() {
	{
		git ls-files --cached --others --exclude-standard -- tests/lib tests/integration tests/bench tests/vm scripts | grep -E '\.sh$|/run$|/run-suites$'
		echo scripts/try.sh
	} | sort -u
}
parses() {
	local f bad=0 first
	for f in $(shell_files); do
		[ -f "$f" ] || continue
		read -r first < "$f"
		if [ "$first" = "#!/bin/sh" ] && command -v dash >/dev/null; then
			dash -n "$f" || bad=1
		else
			bash -n "$f" || bad=1
		fi
	done
	return $bad
}
no_own_tap_helpers() {
	local hits
	hits=$(shell_files | grep -v '^tests/lib/tap\.sh$' |
		xargs grep -nE '^[[:space:]]*(ok|nok|not_ok|skip|check|note|bail|plan|summary)[[:space:]]*\(\)' 2>/dev/null)
	[ -z "$hits" ] && return 0
	echo "$hits"
	return 1
}

check_out "suites.list: every entry is NN name source description" well_formed
check_out "suites.list: no two suites share a number" unique_numbers
check_out "suites.list: no two suites share a name" unique_names
check_out "every tests/integration/<dir>/run is a registered suite" dirs_registered
check_out "every suite an install rule names is registered" refs_registered
check_out "every registered suite is installed by a rule that takes its number from the list" all_installed
check_out "no file but suites.list gives a suite's number" no_numbers_elsewhere
check_out "every shell suite and helper parses (bash -n, dash -n for /bin/sh)" parses
check_out "no shell suite defines its own TAP helpers (tests/lib/tap.sh has them)" no_own_tap_helpers
plan
summary
tap_status
