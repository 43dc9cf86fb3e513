#!/usr/bin/env bash
# Install what stageload needs to build (and, with --test, to run its test
# suite), using apt on Debian/Ubuntu or Homebrew on macOS. Installs only what
# is missing, so a second run does nothing.
set -euo pipefail

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if [ "$(uname -s)" = Darwin ]; then
	pkgs=(cmake pkg-config libuv cjson sqlite)
	[ "$want_tests" -eq 1 ] && pkgs+=(cmocka shellcheck)
	missing=()
	for p in "${pkgs[@]}"; do
		brew list --formula "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] || brew install "${missing[@]}"
	exit 0
fi

pkgs=(build-essential cmake pkg-config libuv1-dev libcjson-dev libsqlite3-dev)
if [ "$want_tests" -eq 1 ]; then
	# sqlite3: integrity checks; python3: socket-level tests; shellcheck,
	# file, tcl: launchd script checks and the macOS cross-build; clang and
	# its runtime: the fuzz targets.
	pkgs+=(libcmocka-dev sqlite3 shellcheck file tcl xz-utils dpkg-dev
		clang libclang-rt-dev valgrind procps util-linux passwd)
	command -v python3 >/dev/null || pkgs+=(python3)
	command -v npm >/dev/null || pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
