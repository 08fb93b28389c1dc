#!/bin/sh
# libbpf-iou.sh IN.a OUT.a: the copy of libbpf.a the daemon links
# (bpf_btf.c). btf__load_vmlinux_btf() and btf__free() are made weak, so the
# daemon's own definitions serve libbpf's calls, and btf__free()'s code is
# also named __real_btf__free for the daemon's to call. libbpf.a holds one
# relocatable object (libbpf-in.o), whose calls to btf__free() are bound
# inside it: the linker's --wrap would not reach them, a weak symbol does.
set -eu
in=$1 out=$2
if [ "$(ar t "$in" | wc -l)" != 1 ]; then
	echo "$0: $in: expected one object (libbpf-in.o), found: $(ar t "$in" | tr '\n' ' ')" >&2
	exit 1
fi
# "VALUE g F SECTION SIZE btf__free": the section and offset of its code
at=$(objdump -t "$in" | awk '$NF == "btf__free" && $3 == "F" { print $4 ":0x" $1 }')
if [ "$(echo "$at" | wc -w)" != 1 ]; then
	echo "$0: $in: btf__free defined ${at:-nowhere}, expected once" >&2
	exit 1
fi
objcopy --weaken-symbol=btf__load_vmlinux_btf --weaken-symbol=btf__free \
	--add-symbol "__real_btf__free=$at,global,function" "$in" "$out"
