#!/usr/bin/env bash
# The Python package's tests. `setup` installs python/ into a venv in the
# build directory (offline: --no-build-isolation with the interpreter's
# setuptools, --system-site-packages for Debian's python3-pytest); any other
# first argument is a pytest file of tests/python/ run with that venv
# (test_torch.py also needs torch: Debian's python3-torch).
# SL_PYTHON is the interpreter CMake chose (STAGELOAD_PYTHON).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
py=${SL_PYTHON:-/usr/bin/python3}
venv=${SL_PYVENV:?SL_PYVENV is set by ctest}

skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL (CI=true forbids this skip): $*" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

if [ "${1:-}" = setup ]; then
	[ -x "$py" ] || skip "no Python interpreter at $py (cmake -DSTAGELOAD_PYTHON=PATH)"
	echo "python: $py ($("$py" --version 2>&1))"
	"$py" -c 'import venv, ensurepip' 2>/dev/null ||
		skip "$py has no venv/ensurepip: install python3-venv (scripts/deps.sh --test)"
	"$py" -c 'import setuptools' 2>/dev/null ||
		skip "$py has no setuptools: install python3-setuptools (scripts/deps.sh --test)"
	"$py" -c 'import wheel' 2>/dev/null ||
		skip "$py has no wheel: install python3-wheel (scripts/deps.sh --test)"
	"$py" -c 'import pytest' 2>/dev/null ||
		skip "$py has no pytest: install python3-pytest (scripts/deps.sh --test)"
	rm -rf "$venv" "$venv.src"
	"$py" -m venv --system-site-packages "$venv" || exit 1
	# Built from a copy, so the source tree gets no build/ or egg-info.
	mkdir -p "$venv.src" && cp -R "$src/python/." "$venv.src/" || exit 1
	"$venv/bin/python" -m pip install --quiet --no-build-isolation --no-index \
		--disable-pip-version-check "$venv.src" || exit 1
	"$venv/bin/python" -c 'import stageload, sys; print("installed", stageload.__file__)'
	exit $?
fi

[ -x "$venv/bin/python" ] || skip "no venv at $venv: the python_setup test did not run"
"$venv/bin/python" -c 'import pytest' 2>/dev/null ||
	skip "no pytest: install python3-pytest (scripts/deps.sh --test)"
if [ "${1:-}" = test_torch.py ]; then
	"$venv/bin/python" -c 'import torch' 2>/dev/null ||
		skip "no torch for $py: install python3-torch (scripts/deps.sh --test)"
fi
cd "$here" || exit 1
# -p no:cacheprovider: nothing written into the source tree
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
