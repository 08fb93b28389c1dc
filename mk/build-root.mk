# Where `make kernel` leaves what userspace builds against: the patched
# kernel's vmlinux.h and uapi headers, and libbpf/bpftool from its tree.
# Included by the Makefiles that build BPF programs and their loaders.
BUILD_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/iou-offload
KCONFIG    ?= guest
KOBJ       ?= $(BUILD_ROOT)/obj-$(KCONFIG)
KHDR       ?= $(BUILD_ROOT)/headers-$(KCONFIG)
TOOLS      ?= $(BUILD_ROOT)/tools
VMLINUX_H  ?= $(KOBJ)/vmlinux.h
BPFTOOL    ?= $(TOOLS)/bpftool/bpftool
LIBBPF_DIR ?= $(TOOLS)/libbpf/root/usr
