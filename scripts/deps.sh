#!/usr/bin/env bash
# Install every package the project needs on Debian 12, with apt-get.
# Idempotent: prints nothing and runs no apt-get when all is installed.
set -euo pipefail

# `deps.sh try`: only what make try builds and runs (the daemon without BPF
# and its host tests: a compiler, pkg-config and five libraries)
try_pkgs=(build-essential pkg-config liburing-dev libinih-dev libsystemd-dev libisal-dev libcmocka-dev)

pkgs=(
	# kernel base and build tools
	linux-source-6.12 build-essential flex bison bc libelf-dev libssl-dev
	pahole ccache cpio zstd xz-utils rsync kmod python3
	# BPF toolchain (libbpf/bpftool from the 6.12 tree are built by `make kernel`)
	clang llvm libbpf-dev bpftool libcap-dev libzstd-dev zlib1g-dev
	# userspace libraries
	pkg-config liburing-dev libinih-dev libsystemd-dev libisal-dev libcmocka-dev
	# guest tools
	qemu-system-x86 mkosi systemd-container debootstrap e2fsprogs
	debian-archive-keyring busybox-static
	# packing the guest image: systemd-sysusers --root (rsync, e2fsprogs above)
	systemd
	# packages: make deb (debian/control's Build-Depends are all in this list),
	# make kernel-deb (KCONFIG=distro starts from Debian's own config)
	debhelper dpkg-dev fakeroot lintian linux-config-6.12
	# tests and benchmarks
	fio gnuplot-nox jq strace
)

[ "${1:-}" = try ] && pkgs=("${try_pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${#missing[@]} package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
