# Where `make kernel` leaves what userspace builds against: the patched
# kernel's vmlinux.h and uapi headers, and libbpf/bpftool from its tree.
# The one place these paths are defined for make (scripts/common.sh mirrors
# it for the shell scripts); every Makefile includes it.
BUILD_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/iou-offload
KCONFIG    ?= guest
KOBJ       ?= $(BUILD_ROOT)/obj-$(KCONFIG)
KHDR       ?= $(BUILD_ROOT)/headers-$(KCONFIG)
TOOLS      ?= $(BUILD_ROOT)/tools
VMLINUX_H  ?= $(KOBJ)/vmlinux.h
BPFTOOL    ?= $(TOOLS)/bpftool/bpftool
LIBBPF_DIR ?= $(TOOLS)/libbpf/root/usr
