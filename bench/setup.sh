#!/usr/bin/env bash
# setup.sh installs what the benchmarks compare hutch against and run
# beside it, from Debian's packages: bubblewrap (bwrap) and runc
# (lifecycle); umoci, skopeo, docker-registry and the mkfs of btrfs and xfs
# (storage). It installs only what is missing, so running it again does
# nothing. Needs root (or sudo) and apt.
#
#	bash bench/setup.sh
set -euo pipefail

die() {
	echo "bench/setup.sh: $*" >&2
	exit 1
}

# mkfs.* and runc live in sbin, which a user's PATH may leave out.
PATH=$PATH:/usr/sbin:/sbin

# package:command pairs; a package counts as present when its command is.
want=(bubblewrap:bwrap runc:runc umoci:umoci skopeo:skopeo docker-registry:docker-registry
	btrfs-progs:mkfs.btrfs xfsprogs:mkfs.xfs)

missing=()
for pair in "${want[@]}"; do
	pkg=${pair%%:*} cmd=${pair#*:}
	if command -v "$cmd" >/dev/null 2>&1; then
		echo "bench/setup.sh: $cmd present ($(command -v "$cmd"))"
	else
		missing+=("$pkg")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

command -v apt-get >/dev/null 2>&1 ||
	die "apt-get not found; install ${missing[*]} with this system's package manager"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || die "not root and no sudo; run as root to install ${missing[*]}"
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
echo "bench/setup.sh: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq || die "apt-get update failed"
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
	die "apt-get install ${missing[*]} failed"

for pair in "${want[@]}"; do
	cmd=${pair#*:}
	command -v "$cmd" >/dev/null 2>&1 || die "$cmd still missing after installing ${pair%%:*}"
done
echo "bench/setup.sh: installed ${missing[*]}"
