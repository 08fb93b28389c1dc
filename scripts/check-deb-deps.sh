#!/usr/bin/env bash
# debian/control and make deps agree: every Build-Depends package (debhelper-compat
# is debhelper's) is one scripts/deps.sh installs. Part of make check; seconds.
set -euo pipefail
. "$(dirname "$0")/common.sh"
bad=0
deps=" $(sed -n '/^pkgs=(/,/^)/p' "$REPO/scripts/deps.sh" | sed 's/#.*//' | tr -s ' \t\n' ' ') "
for p in $(sed -n '/^Build-Depends:/,/^[A-Z]/p' "$REPO/debian/control" | sed '/^#/d; s/^Build-Depends://; /^[A-Z]/d' |
	tr ',' '\n' | sed 's/(.*)//; s/\[.*\]//; s/[[:space:]]//g' | grep -v '^$'); do
	[ "$p" = debhelper-compat ] && p=debhelper
	case "$deps" in
	*" $p "*) ;;
	*) echo "debian/control: Build-Depends $p is not in scripts/deps.sh" >&2; bad=1 ;;
	esac
done
if [ $bad -eq 0 ]; then
	echo "ok 1 - debian/control Build-Depends are all in scripts/deps.sh"
	echo "1 passed, 0 failed, 0 skipped"
else
	echo "not ok 1 - debian/control Build-Depends missing from scripts/deps.sh (above)"
	echo "0 passed, 1 failed, 0 skipped"
fi
exit $bad
