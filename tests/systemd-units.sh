#!/usr/bin/env bash
# The systemd units that `cmake --install` puts in place: the daemon's unit
# leaves jobs running when the daemon stops or restarts (KillMode=process,
# no sandboxing that jobs would inherit), the web program's unit sandboxes,
# ExecStart= names the installed binaries, and systemd-analyze verify
# accepts both.
set -eu
SL_BIN=${SL_BIN:?}
BUILD=$(cd "$SL_BIN/.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sl-units.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
ok() { echo "ok - $*"; }

PREFIX=$TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 ||
	fail "cmake --install failed: $(cat "$TMP/install.log")"
UNITS=$PREFIX/lib/systemd/system
D=$UNITS/stageloadd.service
W=$UNITS/stageload-web.service
[ -s "$D" ] || fail "stageloadd.service not installed in $UNITS"
ok "stageloadd.service installed"

# setting FILE KEY: the value of KEY= in FILE (the last one wins, as in systemd)
setting() {
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

[ "$(setting "$D" KillMode)" = process ] ||
	fail "stageloadd.service: KillMode is '$(setting "$D" KillMode)', not process"
[ "$(setting "$D" ExecStart)" = "$PREFIX/bin/stageloadd" ] ||
	fail "stageloadd.service: ExecStart is '$(setting "$D" ExecStart)'"
ok "daemon unit: KillMode=process, ExecStart=$PREFIX/bin/stageloadd"

# What a job would inherit from the daemon: a mount namespace (and the
# views it sets up), no_new_privs (also implied by the filters and
# restrictions below), a private /tmp, another user or root directory.
inherited='PrivateTmp|PrivateDevices|PrivateMounts|PrivateNetwork|PrivateUsers|PrivateIPC|ProtectSystem|ProtectHome|ProtectKernelTunables|ProtectKernelModules|ProtectKernelLogs|ProtectControlGroups|ProtectClock|ProtectHostname|ProtectProc|ProcSubset|ReadOnlyPaths|ReadWritePaths|InaccessiblePaths|ExecPaths|NoExecPaths|TemporaryFileSystem|BindPaths|BindReadOnlyPaths|MountFlags|RootDirectory|RootImage|NoNewPrivileges|SystemCallFilter|SystemCallArchitectures|RestrictNamespaces|RestrictSUIDSGID|RestrictRealtime|RestrictAddressFamilies|MemoryDenyWriteExecute|LockPersonality|DynamicUser|User|Group|CapabilityBoundingSet|AmbientCapabilities|UMask|LimitNOFILE|LimitMEMLOCK|MemoryMax|MemoryHigh|TasksMax|Delegate'
bad=$(grep -E "^($inherited)=" "$D" || true)
[ -z "$bad" ] || fail "stageloadd.service sets what jobs would inherit: $bad"
ok "daemon unit: no sandboxing or limit that jobs would inherit"

if [ -s "$W" ]; then
	[ "$(setting "$W" ExecStart)" = "$PREFIX/bin/stageload-web --listen 127.0.0.1:9473 --socket /var/run/stageload.sock" ] ||
		fail "stageload-web.service: ExecStart is '$(setting "$W" ExecStart)'"
	for k in DynamicUser NoNewPrivileges PrivateTmp ProtectHome; do
		[ "$(setting "$W" "$k")" = yes ] || fail "stageload-web.service: $k is not yes"
	done
	[ "$(setting "$W" ProtectSystem)" = strict ] || fail "stageload-web.service: ProtectSystem is not strict"
	ok "web unit: loopback listener, sandboxed, no root"
elif [ -x "$SL_BIN/stageload-web" ]; then
	fail "stageload-web is built but its unit is not installed"
fi

if ! command -v systemd-analyze >/dev/null; then
	echo "SKIP: systemd-analyze is missing (apt-get install systemd), so the units were not verified" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
# verify checks the syntax, the ExecStart= binaries and the units named in
# After=/Wants=, which the installed stageloadd.service provides.
units=("$D")
[ -s "$W" ] && units+=("$W")
# MANPATH: Documentation=man:stageloadd(8) is checked against the installed page.
if ! MANPATH="$PREFIX/share/man" SYSTEMD_UNIT_PATH="$UNITS:" systemd-analyze verify "${units[@]}" >"$TMP/verify.log" 2>&1; then
	fail "systemd-analyze verify: $(cat "$TMP/verify.log")"
fi
if [ -s "$TMP/verify.log" ]; then
	fail "systemd-analyze verify warns: $(cat "$TMP/verify.log")"
fi
ok "systemd-analyze verify accepts ${#units[@]} unit(s)"
