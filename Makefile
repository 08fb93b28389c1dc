# iou-offload: the one entry point. `make help` lists the targets.
# Heavy products live under BUILD_ROOT (default ~/.cache/iou-offload), never in the repo.

include mk/build-root.mk
GUEST_TESTS ?=
SOAK_SECONDS ?= 600
export BUILD_ROOT KCONFIG GUEST_TESTS

.DEFAULT_GOAL := help
.PHONY: help deps image-parts image-base kernel-selftests-daemon kernel kernel-bisect kernel-export liburing-test selftests daemon image vm-test vm-reset soak check try test run demo bench bench-kfunc bench-durability bench-scale bench-profile bench-ublk clean-image deb kernel-deb

help: ## this list
	@echo "iou-offload targets (BUILD_ROOT=$(BUILD_ROOT), KCONFIG=$(KCONFIG)):"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /  \1\t/' | expand -t 18
	@echo "variables: BUILD_ROOT=dir  KCONFIG=guest|debug (kernel-deb: guest|distro)  GUEST_TESTS='suite ...'  ACCEL=auto|tcg|kvm  RESET_RUNS=n"

deps: ## install every package the project needs (apt-get; quiet when all is there)
	@scripts/deps.sh

kernel: deps ## extract Debian linux-source-6.12, apply kernel-patches/series, build bzImage, headers, vmlinux.h
	@scripts/kernel.sh

kernel-bisect: kernel ## apply the series patch by patch and build each prefix
	@scripts/kernel-bisect.sh

liburing-test: image ## liburing's own tests (upstream, static) in the guest on this kernel and on base without the series; prints tests failing only with the series (about 30 min under TCG with base's build and run: not in make test)
	@scripts/liburing-test.sh

kernel-export: ## write the commits base..dev of $(BUILD_ROOT)/linux back into kernel-patches/
	@scripts/kernel-export.sh

selftests: kernel ## build tools/testing/selftests/io_uring of the patched tree into the guest payload
	@scripts/selftests.sh

daemon: deps ## build iou-offloadd and its BPF programs
	@$(MAKE) -s -C daemon

deb: kernel ## Debian packages iou-offload, -demo, -tests into BUILD_ROOT/deb (dpkg-buildpackage, lintian)
	@scripts/deb.sh

kernel-deb: deps ## linux-image .debs of the patched kernel and linux-headers (bindeb-pkg; KCONFIG=guest|distro), versioned by the series' commit
	@scripts/kernel-deb.sh

image: deps ## the mkosi guest image (cached by its config), this tree's payload, and the make deb packages installed with dpkg
	@$(MAKE) -s -j2 image-parts
	@scripts/deb.sh
	@tests/vm/build-image.sh

# The base image (mkosi: downloads and dpkg, niced) builds beside the kernel,
# selftests and daemon (CPU), which build one after the other: the daemon's BPF
# programs need the kernel's vmlinux.h. MAKEFLAGS= keeps the kernel's own -j
# from meeting this make's jobserver.
image-parts: image-base kernel-selftests-daemon
image-base:
	@tests/vm/build-image.sh base
kernel-selftests-daemon:
	@MAKEFLAGS= $(MAKE) -s kernel selftests daemon

vm-test: image ## boot the patched kernel in QEMU, run the guest suites, print TAP and a summary
	@tests/vm/run-vm.sh test

vm-reset: image ## hard resets of the guest mid-copy (sysrq-b, QEMU killed), reboot, restart: byte-identical (RESET_RUNS=2)
	@tests/vm/reset-test.sh

soak: ## SOAK_SECONDS (600) of 8 pipelines with random reload/stop/start/kill -9 on the debug kernel (KASAN, lockdep, kmemleak)
	@$(MAKE) -s image KCONFIG=guest
	@$(MAKE) -s kernel KCONFIG=debug
	@KCONFIG=debug GUEST_TESTS=soak TIMEOUT=$$(( $(SOAK_SECONDS) + 1500 )) \
		VM_APPEND="iou.soak_seconds=$(SOAK_SECONDS) iou.suite_timeout=$$(( $(SOAK_SECONDS) + 1200 ))" \
		tests/vm/run-vm.sh test

check: deps ## host tier: unit tests, the uring engine on real files, make try (loads nothing into the host kernel)
	@scripts/check.sh

try: ## the daemon on this machine without the kernel: build it with BPF=0, run every shipped example as written under /tmp/iou-offload-demo (installs only the compiler and five libraries it needs)
	@scripts/deps.sh try
	@scripts/try.sh

test: deps ## check, vm-test, then vm-reset (each to the end), and one summary line over all
	@scripts/test-all.sh

run: image ## boot the guest and run the default pipeline with systemctl start iou-offloadd
	@tests/vm/run-vm.sh demo

demo: run

bench: image ## engines, dd, cp, fio, memcpy side by side in one guest boot, plus a host baseline: table, JSON, plot
	@tests/bench/run-bench.sh all

bench-kfunc: deps ## uring_bpf_memcpy() vs memcpy() micro-benchmark in the guest; prints the table
	@tests/bench/run-bench.sh kfunc

bench-durability: daemon ## host: what checkpoints cost (default vs checkpoint_interval = 1G vs dd conv=fdatasync vs cp + sync), quiet and under a load it starts (DUR_MB, DUR_RUNS)
	@tests/bench/durability.sh

bench-scale: image ## time and CPU per GiB at 1, 4, 16 GiB and 1, 2, 4 pipelines per engine (guest); prints the table
	@tests/bench/run-bench.sh scale

bench-profile: image ## perf record of the engines on stripe and copy (also stripe-multi, destripe-multi: the gathers; tmpfs, or brd with PROFILE_MEDIA=brd), or of their start-up with PROFILE_TRANSFORMS=startup (a copy) or startup-gather (a gathered stripe: the BPF loads) (guest; builds perf from the kernel tree)
	@tests/bench/run-bench.sh profile

bench-ublk: image ## ublk linear/stripe/mirror (zero copy and copy; bpf and uring engines; stripe gather vs per-unit; integrity = crc32c vs none, beside dm over dm-integrity) against dm-linear/stripe/raid1 on the same ram disks: IOPS at 4K qd1/qd32, MiB/s at 1M, CPU per I/O, bytes copied per byte served; table, JSON, plot (guest)
	@tests/bench/run-bench.sh ublk

clean-image: ## drop the built guest image (the kernel and caches stay)
	rm -rf $(BUILD_ROOT)/image $(BUILD_ROOT)/payload
