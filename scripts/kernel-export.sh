#!/usr/bin/env bash
# make kernel-export: write the commits base..dev of the build-root tree
# back into kernel-patches/ (the developer's loop: hack on branch dev in
# $BUILD_ROOT/linux, commit, export, commit the patches here).
set -euo pipefail
. "$(dirname "$0")/common.sh"

branch=${1:-dev}
git -C "$KSRC" rev-parse -q --verify "$branch" >/dev/null || die "no branch $branch in $KSRC"
rm -f "$REPO"/kernel-patches/[0-9][0-9][0-9][0-9]-*.patch
git -C "$KSRC" format-patch -q --no-signature --zero-commit -N -o "$REPO/kernel-patches" "base..$branch"
(cd "$REPO/kernel-patches" && ls [0-9][0-9][0-9][0-9]-*.patch) > "$REPO/kernel-patches/series"
log "exported $(wc -l < "$REPO/kernel-patches/series") patches from $branch"
