#!/usr/bin/env bash
# make deb: iou-offload's Debian packages (debian/) into $BUILD_ROOT/deb/:
# iou-offload (daemon, unit, config, man page, examples), iou-offload-demo
# (the demo data unit) and iou-offload-tests (the guest suites). Built with
# dpkg-buildpackage in a copy of this tree (the working tree's files, so the
# repository gets no build products), against what `make kernel` left under
# BUILD_ROOT (vmlinux.h, libbpf, bpftool), then checked with lintian: any
# error or warning fails (overrides, each with its reason, in debian/*.lintian-overrides).
# Variables: DEB_FROM=worktree|<commit>.
set -euo pipefail
. "$(dirname "$0")/common.sh"

OUT=$BUILD_ROOT/deb
[ -s "$KOBJ/vmlinux.h" ] && [ -x "$TOOLS/bpftool/bpftool" ] ||
	die "no $KOBJ/vmlinux.h or bpftool: the package's BPF engines need make kernel first"
mkdir -p "$OUT"
exec 7>"$OUT/.lock"
flock 7

t0=$(date +%s)
version=$(dpkg-parsechangelog -l "$REPO/debian/changelog" -S Version)
src=$OUT/build/iou-offload-$version
rm -rf "$OUT/build"
mkdir -p "$src"
# DEB_FROM=worktree (default): tracked and new (not ignored) files as they
# are in the working tree; DEB_FROM=<commit>: that commit (e.g. HEAD, while
# others have half-done edits in the working tree)
from=${DEB_FROM:-worktree}
if [ "$from" = worktree ]; then
	(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
		rsync -a --from0 --ignore-missing-args --files-from=- ./ "$src/")
else
	git -C "$REPO" archive "$from" | tar -x -C "$src"
fi

# inputs: the copied tree and what make kernel provides; unchanged -> no rebuild
LIBBPF_A=$(ls "$TOOLS"/libbpf/root/usr/lib*/libbpf.a 2>/dev/null | head -1)
key=$({
	(cd "$src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
	sha256sum "$KOBJ/vmlinux.h" "$TOOLS/bpftool/bpftool" ${LIBBPF_A:+"$LIBBPF_A"} "$KHDR/include/linux/io_uring.h" 2>/dev/null
	dpkg-query -W debhelper lintian 2>/dev/null
} | sha256sum | cut -c1-16)
if [ "$(cat "$OUT/.key" 2>/dev/null)" = "$key" ] && ls "$OUT"/iou-offload_"$version"_amd64.deb >/dev/null 2>&1; then
	rm -rf "$OUT/build"
	log "packages up to date: $OUT"
	exit 0
fi
rm -f "$OUT/.key"

log "building the packages (dpkg-buildpackage; log: $OUT/build.log)"
if ! (cd "$src" && BUILD_ROOT=$BUILD_ROOT KCONFIG=$KCONFIG \
	nice -n 10 dpkg-buildpackage -b -us -uc -j"$(nproc)") > "$OUT/build.log" 2>&1; then
	tail -40 "$OUT/build.log" >&2
	die "dpkg-buildpackage failed (full log: $OUT/build.log)"
fi
rm -f "$OUT"/*.deb "$OUT"/*.changes "$OUT"/*.buildinfo
mv "$OUT"/build/*.deb "$OUT"/build/*.changes "$OUT"/build/*.buildinfo "$OUT/"
rm -rf "$OUT/build"

# the package must carry the bpf and loop engines, not the stub loader
n=$(dpkg-deb --fsys-tarfile "$OUT/iou-offload_${version}_amd64.deb" | tar -xO ./usr/sbin/iou-offloadd |
	grep -ac '\.struct_ops\.link' || true)
[ "$n" -gt 0 ] || die "iou-offload_${version}_amd64.deb: iou-offloadd has no BPF programs"

log "lintian"
if ! lintian --fail-on error,warning --display-info "$OUT"/iou-offload_"${version}"_amd64.changes \
	| tee "$OUT/lintian.log"; then
	die "lintian: errors or warnings (above; $OUT/lintian.log)"
fi
log "install, remove, purge in a scratch root"
"$REPO/scripts/deb-install-test.sh" || die "the packages' install/remove test failed (above)"
echo "$key" > "$OUT/.key"
log "packages built in $(( $(date +%s) - t0 )) s:"
ls -l "$OUT"/*.deb | awk '{ print "   " $NF " (" $5 " bytes)" }'
