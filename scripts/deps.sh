#!/usr/bin/env bash
# Install what stageload needs to build (and, with --test, to run its test
# suite), using apt on Debian/Ubuntu or Homebrew on macOS. Installs only what
# is missing, so a second run does nothing. It lists what is missing and the
# command an admin can run instead before sudo asks for a password, and
# stops there when sudo would need one and there is no terminal.
set -euo pipefail

# --test: also what the test suite needs; --static-src: also the Debian
# source of cJSON, which a STAGELOAD_STATIC_DEPS build compiles (Debian
# ships no static libcjson; cmake/StaticDeps.cmake), fetched into the
# cache the macOS cross build uses, outside the clone. --test fetches it
# too (tests/static-deps.sh), but carries on without it.
want_tests=0
want_src=0
for arg in "$@"; do
	case $arg in
	--test) want_tests=1 ;;
	--static-src) want_src=1 ;;
	*)
		echo "usage: $0 [--test] [--static-src]" >&2
		exit 2
		;;
	esac
done

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if [ "$(uname -s)" = Darwin ]; then
	pkgs=(cmake pkg-config libuv cjson sqlite libmicrohttpd)
	# mandoc is macOS's own man; zsh and bash come with it; fish: admin_man.
	[ "$want_tests" -eq 1 ] && pkgs+=(cmocka shellcheck prometheus fish)
	missing=()
	for p in "${pkgs[@]}"; do
		brew list --formula "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "deps.sh: installing with Homebrew: brew install ${missing[*]}" >&2
		brew install "${missing[@]}"
	fi
	exit 0
fi

pkgs=(build-essential cmake pkg-config libuv1-dev libcjson-dev libsqlite3-dev
	libmicrohttpd-dev)
if [ "$want_tests" -eq 1 ]; then
	# sqlite3: integrity checks; python3: socket-level tests; shellcheck,
	# file, tcl: launchd script checks and the macOS cross-build; clang and
	# its runtime: the fuzz targets.
	pkgs+=(libcmocka-dev sqlite3 shellcheck file tcl xz-utils dpkg-dev
		clang libclang-rt-dev valgrind procps util-linux passwd)
	# The root-only tests: mount (mount, umount, losetup, swapon: their
	# own package on Debian 12, not util-linux), e2fsprogs (mkfs.ext4,
	# e2fsck for the read-only file system test).
	pkgs+=(mount e2fsprogs)
	# The dashboard's tests: promtool and a real Prometheus; headless
	# Chromium driven by selenium (python3-selenium is the system
	# Python's; the test finds it from another python3 too).
	pkgs+=(prometheus chromium chromium-driver python3-selenium)
	# zsh and groff: the generated completions and man page (cli_entries);
	# mandoc (mandoc -T lint of the man pages) and fish (its completions
	# too): admin_man.
	pkgs+=(zsh groff-base mandoc fish)
	# unicode-data: the Unicode data that client/cli-width-table.h is
	# generated from (scripts/gen-width-table.py; cli_reason compares).
	pkgs+=(unicode-data)
	command -v python3 >/dev/null || pkgs+=(python3)
	# The Python package's tests (tests/python/): a venv with Debian's
	# setuptools and wheel (an offline install builds a wheel: without
	# python3-wheel, "invalid command 'bdist_wheel'") and pytest.
	pkgs+=(python3-venv python3-setuptools python3-wheel python3-pytest)
	# The staging tests (tests/python/test_torch.py) and bench/qwen_image.py
	# --synthetic: torch for the system Python (1.13 on Debian 12).
	pkgs+=(python3-torch)
	# The Slurm test (tests/slurm-cluster.sh): a real two-node cluster on
	# loopback, and slurm/spank.h for the plugin (docs/slurm.md).
	pkgs+=(slurmctld slurmd slurm-client munge libslurm-dev)
	# llvm: llvm-objdump lists the libraries each macOS cross-built program
	# loads (cross_macos); systemd: systemd-analyze verify of the units
	# (systemd_units). A minimal Debian (mmdebstrap --variant=apt) has
	# neither.
	pkgs+=(llvm systemd)
	command -v npm >/dev/null || pkgs+=(npm)
fi
# Install what is missing of pkgs, saying first what and how.
install_missing() {
	missing=()
	for p in "${pkgs[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	# Say what will be installed, and how an admin can do it instead, before
	# anything asks for a password.
	echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
	cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps.sh: installing them needs root; an admin can run instead:" >&2
		echo "    sudo sh -c '$cmd'" >&2
		if ! command -v sudo >/dev/null; then
			echo "deps.sh: sudo is not installed: install them as root as above, then run this again" >&2
			exit 1
		fi
		if ! sudo -n true 2>/dev/null && ! [ -t 0 ]; then
			echo "deps.sh: sudo needs a password and there is no terminal to ask on: install them as above, then run this again" >&2
			exit 1
		fi
		echo "deps.sh: running that with sudo now" >&2
	else
		echo "deps.sh: installing them: $cmd" >&2
	fi
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
}
install_missing

# The unpacked cjson source package in the cache, fetched when missing:
# apt-get source needs a deb-src entry, added as a file of our own beside
# Debian's deb822 sources when there is none (as tests/cross-macos.sh does).
static_src() {
	local cache=${STAGELOAD_CROSS_CACHE:-/var/cache/stageload-cross} d
	for d in "$cache"/src/cjson-[0-9]*/; do
		[ -f "$d/cJSON.c" ] && return 0
	done
	echo "deps.sh: fetching the cjson source package into $cache/src" >&2
	if ! grep -Eqs '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/*.sources &&
		! grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list; then
		[ -f /etc/apt/sources.list.d/debian.sources ] || {
			echo "deps.sh: no deb-src entry to fetch sources with; add one" >&2
			return 1
		}
		sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
			as_root tee /etc/apt/sources.list.d/stageload-deb-src.sources >/dev/null
		as_root apt-get update -qq
	fi
	command -v dpkg-source >/dev/null ||
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev
	as_root mkdir -p "$cache/src"
	(cd "$cache/src" && as_root apt-get source -qq cjson)
}

if [ "$want_src" -eq 1 ]; then
	static_src
elif [ "$want_tests" -eq 1 ]; then
	static_src || echo "deps.sh: no cjson source: the static_deps test will skip" >&2
fi
