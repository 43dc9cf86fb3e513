#!/usr/bin/env bash
# The LaunchDaemon files, checked on any OS: the plist parses and has the
# keys launchd needs with the right types, its paths agree with
# install.sh/uninstall.sh, the scripts pass shellcheck, and their dry runs
# print exactly the expected commands while running none of them.
set -euo pipefail

SRC=${SL_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
DIR=$SRC/launchd
LABEL=org.stageload.stageloadd
PLIST=$DIR/$LABEL.plist

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sl-launchd.XXXXXX")
# shellcheck disable=SC2317 # called by the trap
cleanup() { /bin/rm -rf "$TMP"; }
trap cleanup EXIT

failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

# --- the plist ----------------------------------------------------------

[ -f "$PLIST" ] || {
	echo "FAIL: $PLIST missing" >&2
	exit 1
}

# A variable as the script assigns it (NAME=value at the start of a line).
script_var() {
	sed -n "s/^$2=//p" "$DIR/$1" | head -n 1
}

if python3 - "$PLIST" "$LABEL" \
	"$(script_var install.sh DEFAULT_PREFIX)" \
	"$(script_var common.sh DB_DIR)" \
	"$(script_var common.sh LOG_DIR)" "$DIR/$LABEL.newsyslog" <<'PY'; then
import os, plistlib, sys

path, label, prefix, db_dir, log_dir, newsyslog = sys.argv[1:]
with open(path, "rb") as f:
    p = plistlib.load(f)
errors = []

def want(key, types, check=None, why=""):
    if key not in p:
        errors.append("missing key %s" % key)
        return
    if not isinstance(p[key], types) or (isinstance(p[key], bool) and types is int):
        errors.append("%s has type %s" % (key, type(p[key]).__name__))
        return
    if check is not None and not check(p[key]):
        errors.append("%s = %r: %s" % (key, p[key], why))

want("Label", str, lambda v: v == label, "must be " + label)
want("ProgramArguments", list,
     lambda v: v and all(isinstance(a, str) for a in v), "a list of strings")
want("RunAtLoad", bool, lambda v: v is True, "must be true")
want("KeepAlive", (bool, dict), lambda v: v not in (False, {}), "must keep it alive")
want("ProcessType", str, lambda v: v in ("Interactive", "Standard"),
     "Interactive or Standard")
want("StandardErrorPath", str, lambda v: v.startswith("/"), "absolute")
# Longer than the daemon's shutdown needs (batch commit, checkpoint).
want("ExitTimeOut", int, lambda v: 20 <= v <= 300, "20-300 s")
want("AbandonProcessGroup", bool, lambda v: v is True,
     "stopping the daemon must not kill running jobs")
if os.path.basename(path) != label + ".plist":
    errors.append("file name must be the label: " + label + ".plist")

args = p.get("ProgramArguments") or []
if args:
    if args[0] != prefix + "/bin/stageloadd":
        errors.append("ProgramArguments[0] %s is not install.sh's %s/bin/stageloadd"
                      % (args[0], prefix))
    def opt(name):
        return args[args.index(name) + 1] if name in args[:-1] else None
    if opt("--socket") != "/var/run/stageload.sock":
        errors.append("--socket must be /var/run/stageload.sock")
    # launchd writes stderr to the file as it is: the lines need times.
    if "--foreground" not in args and "-f" not in args:
        errors.append("no --foreground: the log file's lines would have no time")
    db = opt("--db")
    if db is None or os.path.dirname(db) != db_dir:
        errors.append("--db %s is not in install.sh's DB_DIR %s" % (db, db_dir))
if os.path.dirname(p.get("StandardErrorPath", "")) != log_dir:
    errors.append("StandardErrorPath is not in install.sh's LOG_DIR " + log_dir)
# The daemon's own log, rotated by newsyslog and reopened at its signal
# through the pid file; never launchd's StandardErrorPath, which launchd
# opens once.
log_file = opt("--log-file") if args else None
pid_file = opt("--pid-file") if args else None
if log_file is None or os.path.dirname(log_file) != log_dir:
    errors.append("--log-file %s is not in LOG_DIR %s" % (log_file, log_dir))
if log_file == p.get("StandardErrorPath"):
    errors.append("--log-file is StandardErrorPath: launchd keeps that one open")
if pid_file is None or os.path.dirname(pid_file) != db_dir:
    errors.append("--pid-file %s is not in DB_DIR %s" % (pid_file, db_dir))
entries = [l.split() for l in open(newsyslog) if l.strip() and not l.startswith("#")]
if len(entries) != 1:
    errors.append("newsyslog: %d entries, expected 1" % len(entries))
else:
    e = entries[0]
    # logfilename owner:group mode count size when flags pid_file sig_num
    if len(e) != 9:
        errors.append("newsyslog: %d fields, expected 9: %r" % (len(e), e))
    else:
        if e[0] != log_file:
            errors.append("newsyslog rotates %s, not --log-file %s" % (e[0], log_file))
        if e[7] != pid_file:
            errors.append("newsyslog signals through %s, not --pid-file %s" % (e[7], pid_file))
        if e[8] != "30":  # SIGUSR1 on macOS (<sys/signal.h>)
            errors.append("newsyslog sends signal %s, not 30 (macOS SIGUSR1)" % e[8])
        if e[1] != "root:wheel" or not e[2].isdigit() or int(e[2], 8) & 0o022:
            errors.append("newsyslog: the new file must be root's, not writable by others")

for e in errors:
    print("plist:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
	pass "plist keys, types and paths agree with install.sh"
else
	fail "plist check"
fi

# The scripts take their paths, labels and the way a LaunchDaemon is
# loaded again from the one common.sh.
for f in install.sh uninstall.sh install-web.sh uninstall-web.sh; do
	# shellcheck disable=SC2016 # a literal line, not an expansion
	if grep -qxF '. "$here/common.sh"' "$DIR/$f"; then
		pass "$f sources common.sh"
	else
		fail "$f does not source common.sh"
	fi
done
[ "$(script_var common.sh LABEL)" = "$LABEL" ] || fail "common.sh LABEL is not $LABEL"

# --- the Homebrew formula -------------------------------------------------

FORMULA=$SRC/packaging/stageload.rb
if [ -f "$FORMULA" ]; then
	# brew services must serve the same socket and database as the plist.
	for want in 'require_root true' 'service do' '"/var/run/stageload.sock"' \
		'"/var/db/stageload/stageload.db"' 'head ' 'license "ISC"' \
		'stop_timeout 30' 'keep_alive successful_exit: false' \
		'"-DSTAGELOAD_STATIC_DEPS=ON"'; do
		if grep -qF -- "$want" "$FORMULA"; then
			pass "formula has $want"
		else
			fail "formula lacks $want"
		fi
	done
	if command -v ruby >/dev/null; then
		if ruby -c "$FORMULA" >/dev/null; then
			pass "formula is valid Ruby"
		else
			fail "ruby -c $FORMULA"
		fi
	else
		echo "note: ruby not installed; formula syntax not checked"
	fi
else
	fail "$FORMULA missing"
fi

# --- shellcheck --------------------------------------------------------

if command -v shellcheck >/dev/null; then
	if (cd "$SRC" && shellcheck -x launchd/install.sh launchd/uninstall.sh \
		launchd/install-web.sh launchd/uninstall-web.sh); then
		pass "shellcheck of the install and uninstall scripts (and common.sh through them)"
	else
		fail "shellcheck"
	fi
else
	echo "SKIP: shellcheck not installed (apt-get install shellcheck)" >&2
	if [ "${CI:-}" = true ]; then
		fail "shellcheck is required under CI=true"
	else
		exit 77
	fi
fi

# --- dry runs ------------------------------------------------------------

# Fakes for every command the scripts may run. launchctl answers "print"
# (a read-only query) as told by FAKE_LOADED; any other call to a fake is
# a command that was run for real, which a dry run must never do.
FAKE=$TMP/bin
mkdir -p "$FAKE"
#
# With FAKE_REAL=1 (a real run, as "root") every fake succeeds and
# launchctl keeps state in $TMP/state: print answers loaded while
# $TMP/state/loaded exists; bootout leaves it loaded for FAKE_GONE_AFTER
# more prints (launchd letting the job go late); bootstrap fails with
# launchd's "5: Input/output error" FAKE_BOOTSTRAP_FAILS times, then loads.
for cmd in launchctl install plutil rm chown mkdir cp; do
	cat >"$FAKE/$cmd" <<EOF
#!/bin/sh
echo "$cmd \$*" >>"$TMP/calls"
S=$TMP/state
if [ "$cmd" = launchctl ] && [ "\${FAKE_REAL:-0}" = 1 ]; then
	case \$1 in
	print)
		[ -e "\$S/loaded" ] || exit 113
		if [ -e "\$S/going" ]; then
			n=\$(cat "\$S/going")
			if [ "\$n" -le 0 ]; then
				/bin/rm -f "\$S/loaded" "\$S/going"
				exit 113
			fi
			echo \$((n - 1)) >"\$S/going"
		fi
		exit 0 ;;
	bootout) echo "\${FAKE_GONE_AFTER:-0}" >"\$S/going"; exit 0 ;;
	bootstrap)
		f=\$(cat "\$S/fails" 2>/dev/null || echo 0)
		if [ "\$f" -lt "\${FAKE_BOOTSTRAP_FAILS:-0}" ]; then
			echo \$((f + 1)) >"\$S/fails"
			echo "Bootstrap failed: 5: Input/output error" >&2
			exit 5
		fi
		[ -e "\$S/loaded" ] && { echo "already loaded" >&2; exit 37; }
		: >"\$S/loaded"; exit 0 ;;
	*) exit 0 ;;
	esac
fi
[ "\${FAKE_REAL:-0}" = 1 ] && exit 0
if [ "$cmd" = launchctl ] && [ "\$1" = print ]; then
	[ "\${FAKE_LOADED:-0}" = 1 ] && exit 0
	exit 113
fi
exit 1
EOF
	chmod +x "$FAKE/$cmd"
done
# uid 501 for the "must be root" checks; 0 for a real run.
cat >"$FAKE/id" <<'EOF'
#!/bin/sh
if [ "$1" = -u ]; then
	if [ "${FAKE_REAL:-0}" = 1 ]; then echo 0; else echo 501; fi
	exit 0
fi
exec /usr/bin/id "$@"
EOF
chmod +x "$FAKE/id"

SH="sh" # the scripts are POSIX sh; Debian's sh is dash, which proves it
# run_script NAME LOADED ARGS...: output in $TMP/out, status in $rc
run_script() {
	local name=$1 isloaded=$2
	shift 2
	: >"$TMP/calls"
	rc=0
	FAKE_LOADED=$isloaded PATH="$FAKE:$PATH" $SH "$DIR/$name" "$@" \
		>"$TMP/out" 2>"$TMP/err" || rc=$?
}

# expect_dry NAME LOADED "ARGS" EXPECTED: exact stdout, no command run.
expect_dry() {
	local name=$1 isloaded=$2 args=$3 expected=$4 calls
	# shellcheck disable=SC2086 # ARGS is a word list
	run_script "$name" "$isloaded" $args
	if [ "$rc" -ne 0 ]; then
		fail "$name $args (loaded=$isloaded) exited $rc: $(cat "$TMP/err")"
		return
	fi
	if [ "$(cat "$TMP/out")" != "$expected" ]; then
		fail "$name $args (loaded=$isloaded) printed:
$(cat "$TMP/out")
expected:
$expected"
		return
	fi
	calls=$(grep -v "^launchctl print system/$LABEL\$" "$TMP/calls" || true)
	if [ -n "$calls" ]; then
		fail "$name $args ran commands in a dry run: $calls"
		return
	fi
	pass "$name $args (loaded=$isloaded) prints exactly the expected commands"
}

P=/Library/LaunchDaemons/$LABEL.plist
NS=/etc/newsyslog.d/$LABEL.conf
I_DIRS="+ install -d -m 0755 -o root -g wheel /var/db/stageload
+ install -d -m 0755 -o root -g wheel /var/log/stageload
+ install -m 0644 -o root -g wheel $DIR/$LABEL.plist $P
+ install -m 0644 -o root -g wheel $DIR/$LABEL.newsyslog $NS"

B="+ launchctl enable system/$LABEL
+ launchctl bootstrap system $P"

expect_dry install.sh 0 "--dry-run" "$I_DIRS
+ plutil -lint $P
$B"

# Idempotent: a loaded daemon is booted out before the new plist goes in.
expect_dry install.sh 1 "--dry-run" "$I_DIRS
+ plutil -lint $P
+ launchctl bootout system/$LABEL
$B"

expect_dry install.sh 0 "--prefix /opt/homebrew --dry-run" "$I_DIRS
+ plutil -replace ProgramArguments.0 -string /opt/homebrew/bin/stageloadd $P
+ plutil -lint $P
$B"

expect_dry install.sh 0 "-n --prefix=/opt/homebrew/" "$I_DIRS
+ plutil -replace ProgramArguments.0 -string /opt/homebrew/bin/stageloadd $P
+ plutil -lint $P
$B"

# --copy: the daemon runs a root-owned copy, whatever owns the prefix.
H=/Library/PrivilegedHelperTools
HC=$H/$LABEL
MK_H="+ install -d -m 1755 -o root -g wheel $H
"
[ -d "$H" ] && MK_H=""
expect_dry install.sh 0 "--prefix /opt/homebrew --copy --dry-run" "+ install -d -m 0755 -o root -g wheel /var/db/stageload
+ install -d -m 0755 -o root -g wheel /var/log/stageload
$MK_H+ install -m 0755 -o root -g wheel /opt/homebrew/bin/stageloadd $HC
+ install -m 0644 -o root -g wheel $DIR/$LABEL.plist $P
+ install -m 0644 -o root -g wheel $DIR/$LABEL.newsyslog $NS
+ plutil -replace ProgramArguments.0 -string $HC $P
+ plutil -lint $P
$B"

expect_dry uninstall.sh 1 "--dry-run" "+ launchctl bootout system/$LABEL
+ rm -f $P $HC $NS"

expect_dry uninstall.sh 0 "--dry-run" "+ rm -f $P $HC $NS"

expect_dry uninstall.sh 1 "--dry-run --purge" "+ launchctl bootout system/$LABEL
+ rm -f $P $HC $NS
+ rm -rf /var/db/stageload /var/log/stageload"

# A prefix with a space is printed so a shell reads it back as one word.
run_script install.sh 0 --dry-run --prefix "/Volumes/My Tools"
if grep -qxF "+ plutil -replace ProgramArguments.0 -string '/Volumes/My Tools/bin/stageloadd' $P" "$TMP/out"; then
	pass "install.sh quotes a prefix with a space"
else
	fail "install.sh did not quote '/Volumes/My Tools': $(cat "$TMP/out")"
fi

# --- refusals ------------------------------------------------------------

# expect_refusal NAME STATUS PATTERN ARGS...: exits STATUS, says PATTERN on
# stderr, and runs nothing at all.
expect_refusal() {
	local name=$1 status=$2 pattern=$3
	shift 3
	run_script "$name" 1 "$@"
	if [ "$rc" -ne "$status" ]; then
		fail "$name $* exited $rc, expected $status"
	elif ! grep -q -- "$pattern" "$TMP/err"; then
		fail "$name $*: stderr lacks '$pattern': $(cat "$TMP/err")"
	elif [ -s "$TMP/out" ] || grep -qv '^launchctl print' "$TMP/calls"; then
		fail "$name $* acted before refusing: $(cat "$TMP/out" "$TMP/calls")"
	else
		pass "$name $* refuses ($status: $pattern)"
	fi
}

mkdir -p "$TMP/prefix/bin"
printf '#!/bin/sh\n' >"$TMP/prefix/bin/stageloadd"
chmod +x "$TMP/prefix/bin/stageloadd"
expect_refusal install.sh 1 "must run as root" --prefix "$TMP/prefix"
expect_refusal uninstall.sh 1 "must run as root"
expect_refusal install.sh 1 "not found" --prefix "$TMP/nowhere"
expect_refusal install.sh 2 "absolute" --prefix relative/dir --dry-run
expect_refusal install.sh 2 "unknown argument" --bogus
expect_refusal uninstall.sh 2 "unknown argument" --bogus
expect_refusal install.sh 2 "usage" --prefix
# A binary a user could replace (here: under /tmp, which anyone can
# write) is refused even in a dry run, naming --copy.
expect_refusal install.sh 1 "writable by group or others" --prefix "$TMP/prefix" --dry-run
expect_refusal install.sh 1 "--copy" --prefix "$TMP/prefix" --dry-run

# --- path_unsafe ---------------------------------------------------------

# The rule itself, on paths of this machine: root's /usr/bin is safe; a
# file under /tmp, a link into /tmp, and a file another uid owns are not.
# shellcheck disable=SC2016 # expanded by the inner sh
unsafe_of() { $SH -c '. "$1/common.sh" && path_unsafe "$2"' sh "$DIR" "$1"; }
check_unsafe() {
	local path=$1 want=$2 got
	got=$(unsafe_of "$path")
	case $want in
	"")
		if [ -z "$got" ]; then
			pass "path_unsafe $path: safe"
		else
			fail "path_unsafe $path: $got"
		fi
		;;
	*) case $got in
		*"$want"*) pass "path_unsafe $path: $got" ;;
		*) fail "path_unsafe $path: '$got', expected '$want'" ;;
		esac ;;
	esac
}
check_unsafe /usr/bin/env ""
check_unsafe "$TMP/prefix/bin/stageloadd" "writable by group or others"
check_unsafe "$TMP/nowhere/x" "no such directory"
if [ "$(/usr/bin/id -u)" = 0 ] && SAFE=$(mktemp -d /run/sl-launchd.XXXXXX 2>/dev/null); then
	# A root-owned 0755 chain from / (under /run), for what follows.
	trap '/bin/rm -rf "$TMP" "$SAFE"' EXIT
	chmod 0755 "$SAFE"
	mkdir -m 0755 "$SAFE/bin"
	printf '#!/bin/sh\n' >"$SAFE/bin/stageloadd"
	chmod 0755 "$SAFE/bin/stageloadd"
	check_unsafe "$SAFE/bin/stageloadd" ""
	ln -s /tmp "$SAFE/tmplink"
	check_unsafe "$SAFE/tmplink/x" "writable by group or others"
	ln -s "$TMP/prefix/bin/stageloadd" "$SAFE/bin/link"
	check_unsafe "$SAFE/bin/link" "writable by group or others"
	cp "$SAFE/bin/stageloadd" "$SAFE/bin/theirs"
	chown 1:1 "$SAFE/bin/theirs"
	check_unsafe "$SAFE/bin/theirs" "owned by uid 1"
	chmod 0775 "$SAFE/bin"
	check_unsafe "$SAFE/bin/stageloadd" "writable by group or others"
	chmod 0755 "$SAFE/bin"

	# --- the libraries a root program loads (otool played by a fake) -----
	# otool -L prints $TMP/otool-L after the file's name, otool -l prints
	# $TMP/otool-l: what a Mach-O stageloadd linked with libuv from a keg
	# would show.
	OT=$TMP/otool-bin
	mkdir -p "$OT"
	# shellcheck disable=SC2016 # the fake expands them
	printf '#!/bin/sh\ncase $1 in\n-L) echo "$2:"; cat "%s" ;;\n-l) cat "%s" ;;\nesac\n' \
		"$TMP/otool-L" "$TMP/otool-l" >"$OT/otool"
	chmod +x "$OT/otool"
	mkdir -m 0755 "$SAFE/lib"
	: >"$SAFE/lib/libuv.1.dylib"
	chmod 0644 "$SAFE/lib/libuv.1.dylib"
	printf 'Load command 12\n          cmd LC_RPATH\n      cmdsize 32\n         path @loader_path/../lib (offset 12)\n' >"$TMP/otool-l"
	printf '\t@rpath/libuv.1.dylib (compatibility version 2.0.0, current version 2.0.0)\n\t/usr/lib/libSystem.B.dylib (compatibility version 1.0.0, current version 1345.0.0)\n' >"$TMP/otool-L"
	# shellcheck disable=SC2016 # expanded by the inner sh
	libs=$(PATH="$OT:$PATH" $SH -c '. "$1/common.sh" && libs_of "$2"' sh "$DIR" "$SAFE/bin/stageloadd")
	if [ "$libs" = "$SAFE/bin/../lib/libuv.1.dylib
/usr/lib/libSystem.B.dylib" ]; then
		pass "libs_of resolves @rpath through LC_RPATH's @loader_path"
	else
		fail "libs_of: $libs"
	fi
	# shellcheck disable=SC2016 # expanded by the inner sh
	libs_unsafe_of() { PATH="$OT:$PATH" $SH -c '. "$1/common.sh" && libs_unsafe "$2"' sh "$DIR" "$1"; }
	got=$(libs_unsafe_of "$SAFE/bin/stageloadd")
	if [ -z "$got" ]; then
		pass "libs_unsafe: root's libraries pass"
	else
		fail "libs_unsafe with root's libraries: $got"
	fi
	# A library in a directory others can write (a keg the Homebrew
	# user owns is refused the same way: not root's).
	mkdir -p "$TMP/prefix/lib"
	: >"$TMP/prefix/lib/libcjson.1.dylib"
	printf '\t%s (compatibility version 1.0.0, current version 1.7.18)\n\t/usr/lib/libSystem.B.dylib (compatibility version 1.0.0, current version 1.0.0)\n' \
		"$TMP/prefix/lib/libcjson.1.dylib" >"$TMP/otool-L"
	got=$(libs_unsafe_of "$SAFE/bin/stageloadd")
	case $got in
	"library $TMP/prefix/lib/libcjson.1.dylib: "*"writable by group or others"*)
		pass "libs_unsafe names a library others could replace: $got" ;;
	*) fail "libs_unsafe with a library under /tmp: '$got'" ;;
	esac
	# install.sh refuses such a program, --copy or not, before any command.
	for args in "--prefix $SAFE --dry-run" "--prefix $SAFE --copy --dry-run"; do
		: >"$TMP/calls"
		rc=0
		# shellcheck disable=SC2086 # a word list
		PATH="$OT:$FAKE:$PATH" $SH "$DIR/install.sh" $args >"$TMP/out" 2>"$TMP/err" || rc=$?
		if [ "$rc" -eq 1 ] && grep -q "loads a library $TMP/prefix/lib/libcjson.1.dylib" "$TMP/err" &&
			grep -q "STAGELOAD_STATIC_DEPS" "$TMP/err" && [ ! -s "$TMP/out" ]; then
			pass "install.sh $args refuses a program loading a replaceable library"
		else
			fail "install.sh $args with a replaceable library: rc=$rc $(cat "$TMP/err" "$TMP/out")"
		fi
	done
	# Without otool: a warning, and the install goes on.
	rc=0
	PATH="$FAKE:$PATH" $SH "$DIR/install.sh" --prefix "$SAFE" --dry-run >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "otool does not run.*xcode-select --install" "$TMP/err"; then
		pass "install.sh without otool warns that the libraries are not checked"
	else
		fail "install.sh without otool: rc=$rc $(cat "$TMP/err")"
	fi

	# macOS without the Command Line Tools has /usr/bin/otool all the
	# same: a stand-in that only offers to install them, and fails.
	mkdir -p "$TMP/otool-stub"
	printf '#!/bin/sh\necho "xcode-select: note: No developer tools were found, requesting install." >&2\nexit 1\n' >"$TMP/otool-stub/otool"
	chmod +x "$TMP/otool-stub/otool"
	rc=0
	PATH="$TMP/otool-stub:$FAKE:$PATH" $SH "$DIR/install.sh" --prefix "$SAFE" --dry-run >"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "otool does not run.*xcode-select --install" "$TMP/err"; then
		pass "install.sh with the otool stand-in of a Mac without the tools warns too"
	else
		fail "install.sh with a failing otool: rc=$rc $(cat "$TMP/err")"
	fi

	# --- a real run, launchd played by a fake -----------------------------
	# Loaded; after bootout launchd still lists it for 3 prints; then
	# bootstrap fails twice with "5: Input/output error".
	mkdir -p "$TMP/state"
	: >"$TMP/state/loaded"
	: >"$TMP/calls"
	rc=0
	FAKE_REAL=1 FAKE_GONE_AFTER=3 FAKE_BOOTSTRAP_FAILS=2 PATH="$FAKE:$PATH" \
		$SH "$DIR/install.sh" --prefix "$SAFE" >"$TMP/out" 2>"$TMP/err" || rc=$?
	seq=$(grep '^launchctl' "$TMP/calls" | tr '\n' ';')
	want="launchctl print system/$LABEL;launchctl bootout system/$LABEL;"
	want="${want}launchctl print system/$LABEL;launchctl print system/$LABEL;"
	want="${want}launchctl print system/$LABEL;launchctl print system/$LABEL;"
	want="${want}launchctl enable system/$LABEL;"
	want="${want}launchctl bootstrap system $P;launchctl bootstrap system $P;"
	want="${want}launchctl bootstrap system $P;"
	if [ "$rc" -eq 0 ] && [ "$seq" = "$want" ] && [ -e "$TMP/state/loaded" ] &&
		grep -q "trying again (3 of 5)" "$TMP/err"; then
		pass "install.sh waits for the bootout, enables, and retries bootstrap"
	else
		fail "install.sh real run: rc=$rc calls=$seq err=$(cat "$TMP/err")"
	fi
	# A bootstrap that keeps failing gives up after 5 tries, exit 1.
	rm -rf "$TMP/state" && mkdir -p "$TMP/state"
	: >"$TMP/calls"
	rc=0
	FAKE_REAL=1 FAKE_BOOTSTRAP_FAILS=99 PATH="$FAKE:$PATH" \
		$SH "$DIR/install.sh" --prefix "$SAFE" >"$TMP/out" 2>"$TMP/err" || rc=$?
	n=$(grep -c '^launchctl bootstrap' "$TMP/calls" || true)
	if [ "$rc" -eq 1 ] && [ "$n" -eq 5 ] && grep -q "failed 5 times" "$TMP/err"; then
		pass "install.sh gives up after 5 bootstraps"
	else
		fail "install.sh endless bootstrap failure: rc=$rc tries=$n err=$(cat "$TMP/err")"
	fi
	# install-web.sh shares the wait and the retry (launchd/common.sh):
	# the same late bootout and failing bootstraps.
	printf '#!/bin/sh\n' >"$SAFE/bin/stageload-web"
	chmod 0755 "$SAFE/bin/stageload-web"
	WP=/Library/LaunchDaemons/org.stageload.web.plist
	rm -rf "$TMP/state" && mkdir -p "$TMP/state"
	: >"$TMP/state/loaded"
	: >"$TMP/calls"
	rc=0
	FAKE_REAL=1 FAKE_GONE_AFTER=2 FAKE_BOOTSTRAP_FAILS=2 PATH="$FAKE:$PATH" \
		$SH "$DIR/install-web.sh" --prefix "$SAFE" >"$TMP/out" 2>"$TMP/err" || rc=$?
	seq=$(grep '^launchctl' "$TMP/calls" | tr '\n' ';')
	want="launchctl print system/org.stageload.web;launchctl bootout system/org.stageload.web;"
	want="${want}launchctl print system/org.stageload.web;launchctl print system/org.stageload.web;"
	want="${want}launchctl print system/org.stageload.web;"
	want="${want}launchctl enable system/org.stageload.web;"
	want="${want}launchctl bootstrap system $WP;launchctl bootstrap system $WP;"
	want="${want}launchctl bootstrap system $WP;"
	if [ "$rc" -eq 0 ] && [ "$seq" = "$want" ] && [ -e "$TMP/state/loaded" ] &&
		grep -q "trying again (3 of 5)" "$TMP/err"; then
		pass "install-web.sh waits for the bootout, enables, and retries bootstrap (common.sh)"
	else
		fail "install-web.sh real run: rc=$rc calls=$seq err=$(cat "$TMP/err")"
	fi
	# The unsafe binary is refused in a real run too, before any command.
	rm -rf "$TMP/state" && mkdir -p "$TMP/state"
	: >"$TMP/calls"
	rc=0
	FAKE_REAL=1 PATH="$FAKE:$PATH" $SH "$DIR/install.sh" --prefix "$TMP/prefix" \
		>"$TMP/out" 2>"$TMP/err" || rc=$?
	if [ "$rc" -eq 1 ] && grep -q "refusing" "$TMP/err" && ! grep -qv '^launchctl print' "$TMP/calls"; then
		pass "install.sh refuses a replaceable binary in a real run"
	else
		fail "install.sh real run with $TMP/prefix: rc=$rc $(cat "$TMP/err" "$TMP/calls")"
	fi
else
	echo "SKIP: the root-owned path checks and the real run need root and a writable /run" >&2
	if [ "${CI:-}" = true ]; then
		fail "under CI=true the root-only part of this test must run"
	fi
fi

# --- the log's rotation, with the real daemon --------------------------

# What newsyslog does with the entry in org.stageload.stageloadd.newsyslog:
# move the log file away, then send the signal to the pid in the pid
# file; the daemon must then write to a new file at the same path. The
# entry's signal, 30, is SIGUSR1 on macOS; here the same signal by name.
BIN=${SL_BIN:-$SRC/build/bin}
if [ -x "$BIN/stageloadd" ]; then
	D=$(mktemp -d "${TMPDIR:-/tmp}/sl-logfile.XXXXXX")
	mkdir -p "$D/proc" "$D/log"
	chmod 0755 "$D/log"
	printf 'MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n' >"$D/proc/meminfo"
	LOGF=$D/log/stageloadd.log
	PIDF=$D/stageloadd.pid
	STAGELOAD_CONFIG="" "$BIN/stageloadd" -f --socket "$D/sl.sock" --db "$D/sl.db" \
		--proc-root "$D/proc" --log-file "$LOGF" --pid-file "$PIDF" \
		2>"$D/stderr" &
	dpid=$!
	trap '/bin/rm -rf "$TMP" "${SAFE:-}"; kill "$dpid" 2>/dev/null || true; /bin/rm -rf "$D"' EXIT
	# poll_for SECS CMD...: until CMD succeeds, at most SECS seconds
	poll_for() {
		local end=$((SECONDS + $1))
		shift
		until "$@"; do
			[ "$SECONDS" -lt "$end" ] || return 1
			sleep 0.05
		done
	}
	has() { [ -f "$1" ] && grep -q -- "$2" "$1"; }
	if ! poll_for 10 has "$LOGF" "started"; then
		fail "the daemon did not log its start to --log-file: $(cat "$D/stderr" "$LOGF" 2>/dev/null)"
	elif [ "$(cat "$PIDF" 2>/dev/null)" != "$dpid" ]; then
		fail "--pid-file holds '$(cat "$PIDF" 2>/dev/null)', not the daemon's pid $dpid"
	elif [ -s "$D/stderr" ]; then
		fail "the daemon wrote to stderr with --log-file: $(cat "$D/stderr")"
	else
		mv "$LOGF" "$LOGF.0"
		kill -USR1 "$(cat "$PIDF")"
		if poll_for 10 has "$LOGF" "SIGUSR1: log file $LOGF reopened" &&
			! grep -q "reopened" "$LOGF.0"; then
			pass "after newsyslog's move and signal the daemon logs to a new $LOGF"
		else
			fail "no new log file after SIGUSR1: $(ls -l "$D/log"; cat "$LOGF.0")"
		fi
		kill -TERM "$dpid"
		wait "$dpid" || true
		if has "$LOGF" "stopped" && [ ! -e "$PIDF" ]; then
			pass "the stop is logged to the new file and the pid file goes"
		else
			fail "after the stop: pid file $(ls "$PIDF" 2>&1), log: $(cat "$LOGF")"
		fi
	fi
	kill "$dpid" 2>/dev/null || true
	# A log file someone could swap (a symbolic link) is refused at start.
	ln -s "$D/elsewhere" "$D/log/link.log"
	rc=0
	STAGELOAD_CONFIG="" "$BIN/stageloadd" --socket "$D/sl2.sock" --db "$D/sl2.db" \
		--proc-root "$D/proc" --log-file "$D/log/link.log" >/dev/null 2>"$D/stderr" || rc=$?
	if [ "$rc" -eq 1 ] && grep -q "log file" "$D/stderr" && [ ! -e "$D/elsewhere" ]; then
		pass "a --log-file that is a symbolic link is refused: $(cat "$D/stderr")"
	else
		fail "--log-file through a link: exit $rc, $(cat "$D/stderr")"
	fi
	# A start that fails after the pid file was written takes it away:
	# newsyslog must not signal a pid another process may get.
	printf 'not a database, only text long enough to be read as a header....................................................' >"$D/bad.db"
	chmod 0600 "$D/bad.db"
	rc=0
	STAGELOAD_CONFIG="" "$BIN/stageloadd" --socket "$D/sl3.sock" --db "$D/bad.db" \
		--proc-root "$D/proc" --pid-file "$D/bad.pid" >/dev/null 2>"$D/stderr" || rc=$?
	if [ "$rc" -eq 1 ] && [ ! -e "$D/bad.pid" ]; then
		pass "a failed start leaves no pid file: $(tail -n 1 "$D/stderr")"
	else
		fail "a failed start: exit $rc, pid file $(ls "$D/bad.pid" 2>&1), $(cat "$D/stderr")"
	fi
	/bin/rm -rf "$D"

	# `brew services start` without sudo: launchd runs the formula's
	# service (the system's paths) as the user, under Homebrew's label.
	# The daemon says why it cannot serve and exits 0, which the
	# formula's keep_alive successful_exit: false does not restart.
	if [ "$(/usr/bin/id -u)" = 0 ] && command -v setpriv >/dev/null; then
		rc=0
		out=$(XPC_SERVICE_NAME=homebrew.mxcl.stageload STAGELOAD_CONFIG="" \
			setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$BIN/stageloadd" --socket "$TMP/brew.sock" --db "$TMP/brew/sl.db" \
			--foreground 2>&1) || rc=$?
		if [ "$rc" -eq 0 ] && [ ! -e "$TMP/brew.sock" ] &&
			grep -q "needs root (sudo brew services start stageload)" <<<"$out"; then
			pass "a brew services user agent exits 0 and says why"
		else
			fail "brew services user agent: exit $rc, $out"
		fi
	else
		echo "SKIP: the brew services user agent check needs root and setpriv" >&2
	fi
else
	echo "SKIP: $BIN/stageloadd not built: the log's rotation is not checked" >&2
	[ "${CI:-}" != true ] || fail "stageloadd must be built under CI=true"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo "all launchd checks passed"
