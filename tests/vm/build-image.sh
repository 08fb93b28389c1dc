#!/usr/bin/env bash
# make image: the guest's root file system, as a raw ext4 image for QEMU.
#
#  1. base: mkosi 14 builds a lean Debian bookworm tree (Format=directory) from
#     tests/vm/mkosi/ into $BUILD_ROOT/image/base-<key>/, once. <key> hashes
#     the mkosi config files (and mkosi's version): `mkosi -i` would silently
#     ignore config changes. Minutes, cold.
#  2. harness overlay: the guest test runner (tests/vm/guest/) and the
#     harness's own suites (tests/integration/{harness,fail-demo}), built on
#     the host and installed into $BUILD_ROOT/image/harness/.
#  3. pack: base + harness overlay + $BUILD_ROOT/payload/ (what the other
#     components install with DESTDIR=$BUILD_ROOT/payload: selftests, bench),
#     then the Debian packages `make deb` built ($BUILD_ROOT/deb/*.deb:
#     iou-offload, iou-offload-demo, iou-offload-tests) installed with
#     `dpkg --root`, so the guest runs what a user installs; into
#     $BUILD_ROOT/image/root.raw with `mkfs.ext4 -d`, only when one of the
#     four changed. Seconds; no loop mount, no root-only mount tricks.
#
# `build-image.sh base` does step 1 only: make image runs it beside the kernel
# build (mkosi mostly downloads and unpacks; the kernel build is CPU).
#
# Variables: BUILD_ROOT, ROOT_FREE_MB (free space in the guest root, default
# 1024; the file is sparse).
set -euo pipefail
. "$(dirname "$0")/../../scripts/common.sh"
trap 'echo "error: ${BASH_SOURCE[0]}:$LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

IMG=$BUILD_ROOT/image
PAYLOAD=$BUILD_ROOT/payload
MKOSI_CONF=$REPO/tests/vm/mkosi
GUEST=$REPO/tests/vm/guest
ROOT_FREE_MB=${ROOT_FREE_MB:-4096}

mkdir -p "$IMG" "$PAYLOAD"
exec 8>"$IMG/.lock"
flock 8

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# tree_hash DIR: names, types, modes, owners, link targets and contents
tree_hash() {
	(cd "$1" && {
		find . -mindepth 1 -printf '%P\t%y\t%m\t%U:%G\t%l\n' | LC_ALL=C sort
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
	}) | sha256sum | cut -c1-16
}

# 1. base image, keyed on its config
base_key=$({ tree_hash "$MKOSI_CONF"; mkosi --version; } | sha256sum | cut -c1-16)
base=$IMG/base-$base_key
if [ ! -d "$base" ]; then
	t0=$(now)
	log "building the mkosi base image (config $base_key); minutes, cold"
	work=$IMG/build-$base_key
	rm -rf "$IMG"/build-*
	mkdir -p "$work" "$BUILD_ROOT/mkosi-cache"
	if ! nice -n 10 mkosi -C "$MKOSI_CONF" --force \
		--output "$work/root" --workspace-dir "$work" \
		--cache "$BUILD_ROOT/mkosi-cache" build > "$IMG/mkosi.log" 2>&1; then
		tail -30 "$IMG/mkosi.log" >&2
		die "mkosi failed (full log: $IMG/mkosi.log)"
	fi
	mv "$work/root" "$base"
	rm -rf "$work"
	for old in "$IMG"/base-*; do
		[ "$old" = "$base" ] || rm -rf "$old"
	done
	log "base image built in $(since "$t0") s: $(du -sh "$base" | cut -f1)"
fi
[ "${1:-}" = base ] && exit 0

# 2. the harness overlay, rebuilt every time (cheap) and compared by content
t0=$(now)
new=$IMG/harness.new
rm -rf "$new"
install -D -m 0755 "$GUEST/run-suites" "$new/usr/lib/iou-offload/run-suites"
install -D -m 0644 -t "$new/usr/lib/systemd/system" "$GUEST/iou-test.target" "$GUEST/iou-test.service"
install -d "$new/etc/systemd/system"
while read -r unit _; do
	case "$unit" in
	''|'#'*) continue ;;
	*/*) install -d "$new/$(dirname "$unit")"; ln -s /dev/null "$new/$unit" ;;
	*) ln -s /dev/null "$new/etc/systemd/system/$unit" ;;
	esac
done < "$GUEST/masked-units"
mkdir -p "$BUILD_ROOT/harness-build"
make -s -C "$REPO/tests/integration/harness" O="$BUILD_ROOT/harness-build" DESTDIR="$new" install
make -s -C "$REPO/tests/integration/fail-demo" DESTDIR="$new" install
rm -rf "$IMG/harness"
mv "$new" "$IMG/harness"

# 3. pack, when base, overlay, payload or packages changed
debs=()
for d in "$BUILD_ROOT"/deb/*.deb; do
	case "$d" in *-dbgsym_*) ;; *) [ -f "$d" ] && debs+=("$d") ;; esac
done
[ ${#debs[@]} -gt 0 ] || die "no packages in $BUILD_ROOT/deb: make deb (make image runs it)"
# what `make -C daemon install DESTDIR=payload` left there before the image
# was built from packages must not shadow the packaged files
rm -rf "$PAYLOAD"/usr/sbin/iou-offloadd "$PAYLOAD"/etc/iou-offloadd.conf "$PAYLOAD"/etc/systemd/system/iou-offload* \
	"$PAYLOAD"/usr/share/man/man8/iou-offloadd.8 "$PAYLOAD"/usr/share/iou-offload
for d in "${debs[@]}"; do
	dpkg-deb --fsys-tarfile "$d" | tar -t | while read -r f; do
		[ -d "$PAYLOAD/$f" ] || rm -f "$PAYLOAD/$f"
	done
done
pack_key=$({
	echo "$base_key $ROOT_FREE_MB"
	tree_hash "$IMG/harness"
	tree_hash "$PAYLOAD"
	sha256sum "${debs[@]}" | cut -d' ' -f1
	mkfs.ext4 -V 2>&1 | sed -n 1p
} | sha256sum | cut -c1-16)
if [ -f "$IMG/root.raw" ] && [ "$(cat "$IMG/root.key" 2>/dev/null)" = "$pack_key" ]; then
	log "image up to date: $IMG/root.raw"
	exit 0
fi

stage=$IMG/stage
rm -rf "$stage"
# hard links: the base tree is not copied. The overlays are laid on top with
# rsync, which replaces files by rename (never writes into a shared inode);
# -I so that it never chmods/chowns an unchanged-looking linked file in place,
# -K so that a payload lib/... lands in the base's merged-/usr lib -> usr/lib.
cp -al "$base" "$stage"
rsync -aKI "$IMG/harness/" "$stage/"
rsync -aKI "$PAYLOAD/" "$stage/"
# the packages, with dpkg (maintainer scripts chrooted into the stage: the
# demo package enables its unit there). dpkg rewrites its database and
# appends to its log: the stage gets its own copies, never the base's inodes.
for d in var/lib/dpkg var/log; do
	rm -rf "${stage:?}/$d"
	cp -a "$base/$d" "$stage/$d"
done
if ! dpkg --root="$stage" --force-unsafe-io -i "${debs[@]}" > "$IMG/dpkg.log" 2>&1; then
	cat "$IMG/dpkg.log" >&2
	die "installing the packages into the image failed"
fi
log "installed into the image: $(cd "$BUILD_ROOT/deb" && for d in "${debs[@]}"; do printf '%s ' "$(basename "$d")"; done)"
# system users (also those the payload's sysusers.d asks for) are created here,
# not at every guest boot; the files are unlinked first, not written through
for f in passwd group shadow gshadow; do
	if [ -f "$stage/etc/$f" ]; then
		cp -p "$stage/etc/$f" "$stage/etc/$f.new"
		mv "$stage/etc/$f.new" "$stage/etc/$f"
	fi
done
systemd-sysusers --root="$stage" >/dev/null
used_mb=$(du -sm "$stage" | cut -f1)
size_mb=$((used_mb + used_mb / 8 + ROOT_FREE_MB + 64))
rm -f "$IMG/root.raw.tmp"
truncate -s "${size_mb}M" "$IMG/root.raw.tmp"
# inode tables and journal initialised here, so the guest's ext4lazyinit
# thread has nothing to zero (everything in the guest is emulated)
mkfs.ext4 -q -F -L iou-root -m 0 -E lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0 \
	-d "$stage" "$IMG/root.raw.tmp" "${size_mb}M"
mv "$IMG/root.raw.tmp" "$IMG/root.raw"
echo "$pack_key" > "$IMG/root.key"
rm -rf "$stage"
log "image packed in $(since "$t0") s: $IMG/root.raw (${used_mb} MiB used of ${size_mb} MiB)"
