# The flags the project's Makefiles share (after build-root.mk): the host C
# dialect and warnings, and how a uring_bpf_ops program is compiled.

# gnu11, warnings on; format truncation and partial initialisers are idioms here
IOU_CFLAGS := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Wno-format-truncation \
	      -Wno-missing-field-initializers -fno-strict-aliasing -pthread

# BPF programs: clang -target bpf against the patched kernel's vmlinux.h, read
# where `make kernel` left it (never copied into the tree), and libbpf's headers
BPF_CLANG  ?= clang
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -I$(dir $(VMLINUX_H)) \
	      -I$(LIBBPF_DIR)/include

# bpf-ops' objects and skeletons, one directory per source tree (two clones
# sharing a build root must not take each other's programs)
IOU_SRC_TREE := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
# (worked out once per make, not at every use of the variable)
ifndef BPF_OUT
BPF_OUT    := $(BUILD_ROOT)/bpf-ops/$(shell printf %s '$(IOU_SRC_TREE)' | sha256sum | cut -c1-12)
endif
