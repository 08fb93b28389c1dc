# Helpers shared by the reliability suites (faults, crash, hostile, reset,
# soak); sourced by their `run`, after the TAP and daemon helpers every shell
# suite shares (tests/lib). What follows is theirs alone.
# the shared helpers: ../lib installed, ../../lib in the source tree
lib=$PWD/../lib; [ -f "$lib/tap.sh" ] || lib=$PWD/../../lib
. "$lib/tap.sh"
. "$lib/daemon.sh"

# device-mapper: create NAME with TABLE; dmpath NAME prints its node.
# --noudevsync: the guest's udev may not answer cookies; the node is made
# by libdevmapper or udev, whichever comes first.
# A TABLE may have several lines.
dm_create() {
	printf '%s\n' "$2" | dmsetup create --noudevsync "$1" || return 1
	udevadm settle -t 5 2>/dev/null
	return 0
}
dm_swap() {	# NAME TABLE: replace the live table (suspend, load, resume)
	dmsetup suspend --noudevsync "$1" &&
		printf '%s\n' "$2" | dmsetup load --noudevsync "$1" &&
		dmsetup resume --noudevsync "$1"
}
dmpath() {
	if [ -b "/dev/mapper/$1" ]; then echo "/dev/mapper/$1"; return; fi
	echo "/dev/dm-$(dmsetup info -c --noheadings -o minor "$1" | tr -d ' ')"
}
# bytes [0, N) of A and B equal, B read with O_DIRECT (what reached the device)
prefix_same_direct() {	# N A B
	[ "$1" -eq 0 ] && return 0
	cmp -s -n "$1" "$2" <(dd if="$3" iflag=direct bs=64K status=none 2>/dev/null)
}
prefix_same() { [ "$1" -eq 0 ] || cmp -s -n "$1" "$2" "$3"; }
# the offset in an error message: "at offset N" (a failed read or write), or
# for a failed fdatasync, which cannot say which block was lost, "the
# checkpoint stays at N"
err_offset() { sed -n -e 's/.* at offset \([0-9]*\).*/\1/p' -e 's/.*checkpoint stays at \([0-9]*\).*/\1/p' <<< "$1" | head -1; }
