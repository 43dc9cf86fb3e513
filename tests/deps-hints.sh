#!/usr/bin/env bash
# A fresh machine: scripts/deps.sh --test lists every package the suite
# needs (mount and e2fsprogs too: on Debian 12 mount, umount, losetup and
# swapon are not in util-linux), says what it will install and the command
# an admin can run before anything asks for a password, and a test whose
# tool is missing says which package holds it instead of a traceback (a
# failure under CI=true, a skip otherwise). apt-get, sudo, dpkg-query and id
# are stand-ins on PATH: nothing is installed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sl-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
ok() {
	echo "ok - $*"
}

if [ "$(uname -s)" != Linux ]; then
	echo "SKIP: deps.sh's apt path is for Debian and Ubuntu" >&2
	exit 77
fi

# --- the stand-ins: every package missing; the uid is $FAKE_UID; sudo
# wants a password; apt-get and sudo write what they were asked to $LOG ---
fake=$tmp/fake
mkdir "$fake"
cat >"$fake/dpkg-query" <<'EOF'
#!/bin/sh
exit 1
EOF
cat >"$fake/id" <<'EOF'
#!/bin/sh
[ "$1" = -u ] && { echo "$FAKE_UID"; exit 0; }
exec /usr/bin/id "$@"
EOF
cat >"$fake/sudo" <<'EOF'
#!/bin/sh
echo "SUDO $*" >>"$LOG"
[ "$1" = -n ] && exit 1
exec "$@"
EOF
cat >"$fake/apt-get" <<'EOF'
#!/bin/sh
echo "APT $*" >>"$LOG"
EOF
chmod +x "$fake"/*
export LOG=$tmp/log

# --- as a user: the list and the admin's command, then a clear stop (no
# terminal for sudo to ask on), and apt-get never runs ---
: >"$LOG"
rc=0
FAKE_UID=1000 PATH="$fake:$PATH" bash "$src/scripts/deps.sh" --test \
	</dev/null 2>>"$LOG" || rc=$?
[ "$rc" = 1 ] || fail "deps.sh as a user without a terminal exited $rc: $(cat "$LOG")"
grep -q '^deps.sh: missing Debian packages: .*\bmount\b.*\be2fsprogs\b' "$LOG" ||
	fail "the missing list lacks mount or e2fsprogs: $(cat "$LOG")"
grep -q "^    sudo sh -c 'apt-get update && .*apt-get install -y .*\bmount e2fsprogs\b" "$LOG" ||
	fail "no command for an admin: $(cat "$LOG")"
grep -q '^APT' "$LOG" && fail "apt-get ran: $(cat "$LOG")"
grep '^SUDO' "$LOG" | grep -vq '^SUDO -n true$' && fail "sudo was asked to install: $(cat "$LOG")"
ok "as a user: deps.sh names mount and e2fsprogs and the admin's command, and installs nothing without a terminal"

# --- as root: it says what it installs, then installs it ---
: >"$LOG"
FAKE_UID=0 PATH="$fake:$PATH" bash "$src/scripts/deps.sh" --test \
	</dev/null 2>>"$LOG" || fail "deps.sh as root failed: $(cat "$LOG")"
said=$(grep -n '^deps.sh: installing them: ' "$LOG" | cut -d: -f1 | head -1)
ran=$(grep -n '^APT update' "$LOG" | cut -d: -f1 | head -1)
if ! { [ -n "$said" ] && [ -n "$ran" ] && [ "$said" -lt "$ran" ]; }; then
	fail "as root: no word before apt-get: $(cat "$LOG")"
fi
grep -q '^APT install -y .*\bmount e2fsprogs\b' "$LOG" ||
	fail "as root: apt-get install lacks mount or e2fsprogs: $(cat "$LOG")"
ok "as root: deps.sh says what it installs, then installs mount and e2fsprogs with the rest"

# --- a missing tool: the package to install, no traceback; a failure under
# CI=true, a skip otherwise (the tests check root before tools) ---
if [ "$(id -u)" -ne 0 ]; then
	ok "# skip the missing-tool checks: the tests reach them only as root"
	exit 0
fi
bare=$tmp/bare # python3 and id, nothing else
mkdir "$bare"
# the interpreter itself, not a wrapper script (a pyenv shim needs bash)
py=$(python3 -c 'import sys; print(sys.executable)') || fail "python3 is needed"
ln -s "$py" "$bare/python3"
ln -s "$(command -v id)" "$bare/id"
for t in jobs-storage:mount daemon-storage:mount storage-faults:mount; do
	name=${t%%:*} pkg=${t#*:}
	for ci in true false; do
		rc=0
		env PATH="$bare" CI=$ci SL_BIN="${SL_BIN:-$src/build/bin}" \
			"$py" "$here/$name.py" >"$tmp/out" 2>&1 || rc=$?
		want=77
		[ "$ci" = true ] && want=1
		[ "$rc" = "$want" ] || fail "$name.py without $pkg (CI=$ci) exited $rc, want $want: $(cat "$tmp/out")"
		grep -q "Traceback" "$tmp/out" && fail "$name.py without $pkg: a traceback: $(cat "$tmp/out")"
		grep -q "apt-get install .*\b$pkg\b" "$tmp/out" ||
			fail "$name.py without $pkg does not name the package: $(cat "$tmp/out")"
	done
done
rc=0
env PATH="$bare" CI=true "$BASH" -c ". '$here/lib/swap.sh'; swap_require_root" >"$tmp/out" 2>&1 || rc=$?
if ! { [ "$rc" = 1 ] && grep -q "swapon (package mount)" "$tmp/out" &&
	grep -q "mkswap (package util-linux)" "$tmp/out"; }; then
	fail "swap.sh without swapon (exit $rc): $(cat "$tmp/out")"
fi
ok "a missing mount, umount or swapon names its package: a failure under CI=true, a skip otherwise, no traceback"
