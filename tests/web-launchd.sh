#!/usr/bin/env bash
# stageload-web's LaunchDaemon files, checked on any OS: the plist parses,
# runs the web program as an unprivileged user on loopback against the
# daemon plist's socket, at install-web.sh's prefix; the scripts are clean
# for shellcheck, and their dry runs print exactly the expected commands.
set -euo pipefail

SRC=${SL_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
DIR=$SRC/launchd
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

if python3 - "$DIR" <<'PY'; then
import plistlib, re, sys
d = sys.argv[1]
web = plistlib.load(open(d + "/org.stageload.web.plist", "rb"))
dmn = plistlib.load(open(d + "/org.stageload.stageloadd.plist", "rb"))
prefix = re.search(r"^DEFAULT_PREFIX=(.*)$", open(d + "/install-web.sh").read(), re.M).group(1)
errors = []
a = web["ProgramArguments"]
if web["Label"] != "org.stageload.web":
    errors.append("Label")
if a[0] != prefix + "/bin/stageload-web":
    errors.append("ProgramArguments[0] %s is not %s/bin/stageload-web" % (a[0], prefix))
if web.get("UserName") in (None, "root") or web.get("GroupName") in (None, "wheel"):
    errors.append("UserName/GroupName must be unprivileged")
lst = a[a.index("--listen") + 1]
if not lst.startswith("127.0.0.1:"):
    errors.append("--listen %s is not loopback" % lst)
da = dmn["ProgramArguments"]
if a[a.index("--socket") + 1] != da[da.index("--socket") + 1]:
    errors.append("--socket differs from the daemon plist's")
if "--allow-remote" in a:
    errors.append("--allow-remote in the plist")
for e in errors:
    print("plist:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
	echo "ok: web plist: nobody, loopback, the daemon's socket, install-web.sh's prefix"
else
	fail "web plist"
fi

if command -v shellcheck >/dev/null; then
	(cd "$SRC" && shellcheck -x launchd/install-web.sh launchd/uninstall-web.sh) ||
		fail "shellcheck"
else
	echo "SKIP: shellcheck not installed (apt-get install shellcheck)" >&2
	[ "${CI:-}" != true ] || fail "shellcheck missing under CI=true"
fi

P=/Library/LaunchDaemons/org.stageload.web.plist
want="+ install -m 0644 -o root -g wheel $DIR/org.stageload.web.plist $P
+ plutil -replace ProgramArguments.0 -string /opt/homebrew/bin/stageload-web $P
+ plutil -lint $P
+ launchctl enable system/org.stageload.web
+ launchctl bootstrap system $P"
got=$(sh "$DIR/install-web.sh" --dry-run --prefix /opt/homebrew 2>/dev/null)
[ "$got" = "$want" ] || fail "install-web.sh --dry-run printed:
$got"
got=$(sh "$DIR/uninstall-web.sh" --dry-run 2>/dev/null)
[ "$got" = "+ rm -f $P" ] || fail "uninstall-web.sh --dry-run printed: $got"

[ $failures -eq 0 ] || exit 1
echo "OK"
