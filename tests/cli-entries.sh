#!/usr/bin/env bash
# Every command entry of stageloadctl, walked: its --help (and help CMD)
# exits 0 and shows every option its entry declares in client/*.c (read by
# lib/cli_entries.py, which also fails on a command file that parses
# options itself); an unknown option, an option without its value and
# --json where there is no JSON form give the one error style, exit 2,
# before anything connects; the global options work before and after the
# command, for every command.
. "$(dirname "$0")/lib/cli.sh"
sl_setup

SRC=${SL_SRC:-$(cd "$(dirname "$0")/.." && pwd)}
entries=$(python3 "$SRC/tests/lib/cli_entries.py" "$SRC") || fail "cannot read the entries: $entries"
[ -n "$entries" ] || fail "no entries found in $SRC/client"
CTL=$SL_BIN/stageloadctl
NOSOCK=$SL_TMP/none.sock # no daemon there: a command that connects exits 69 (doctor: 1)

# one_error EXPECTED CMD ARGS...: exit 2, nothing on stdout, and exactly the
# line EXPECTED on stderr.
one_error() {
	local want=$1 rc=0
	shift
	"$CTL" "$@" >"$SL_TMP/out" 2>"$SL_TMP/err" || rc=$?
	[ "$rc" = 2 ] || fail "$*: exit $rc, want 2 ($(cat "$SL_TMP/err"))"
	[ ! -s "$SL_TMP/out" ] || fail "$*: printed on stdout: $(head -3 "$SL_TMP/out")"
	[ "$(wc -l <"$SL_TMP/err")" = 1 ] || fail "$*: not one line on stderr: $(cat "$SL_TMP/err")"
	[ "$(cat "$SL_TMP/err")" = "$want" ] || fail "$*: said '$(cat "$SL_TMP/err")', want '$want'"
}

# Operands that a command accepts: a job id, or a command line.
operands_of() {
	case $1 in
	-) ;;
	--_*) echo "-- true" ;;
	*) echo 1 ;;
	esac
}

ncmd=0
while read -r name alias flags operands opts; do
	ncmd=$((ncmd + 1))
	names=$name
	[ "$alias" = - ] || names="$name $alias"
	ops=$(operands_of "$operands")
	for cmd in $names; do
		# --- help: exit 0, the command's usage and every option ---
		rc=0
		"$CTL" "$cmd" --help >"$SL_TMP/help" 2>"$SL_TMP/err" || rc=$?
		[ "$rc" = 0 ] && [ ! -s "$SL_TMP/err" ] || fail "$cmd --help: exit $rc: $(cat "$SL_TMP/err")"
		head -1 "$SL_TMP/help" | grep -Eq "^usage: stageloadctl $name( |$)" ||
			fail "$cmd --help starts: $(head -1 "$SL_TMP/help")"
		"$CTL" help "$cmd" | cmp -s - "$SL_TMP/help" || fail "help $cmd differs from $cmd --help"
		"$CTL" -h "$cmd" >/dev/null || fail "-h before $cmd"
		for o in $opts; do
			o=${o%=}
			# in the usage line(s) and in the options below them
			[ "$(grep -c -- "--$o\b" "$SL_TMP/help")" -ge 2 ] &&
				grep -q "^  \(-[a-z], \)\?--$o\b.* [a-z(\"{-]" "$SL_TMP/help" ||
				fail "$cmd --help does not document --$o: $(cat "$SL_TMP/help")"
		done
		case $flags in json*) grep -q "^  --json " "$SL_TMP/help" || fail "$cmd --help lacks --json" ;; esac

		# --- the one error style, before anything connects ---
		# shellcheck disable=SC2086 # the operands are words
		one_error "stageloadctl: $cmd: unknown option '--no-such-option'" \
			--socket "$NOSOCK" "$cmd" --no-such-option $ops
		one_error "stageloadctl: $cmd: unknown option '-Z'" --socket "$NOSOCK" "$cmd" -Z
		for o in $opts; do
			case $o in
			*=)
				o=${o%=}
				"$CTL" --socket "$NOSOCK" "$cmd" "--$o" >/dev/null 2>"$SL_TMP/err" && fail "$cmd --$o without a value passed"
				grep -qx "stageloadctl: $cmd: --$o needs .*" "$SL_TMP/err" ||
					fail "$cmd --$o without a value: $(cat "$SL_TMP/err")"
				;;
			*)
				one_error "stageloadctl: $cmd: --$o takes no value" --socket "$NOSOCK" "$cmd" "--$o=1"
				;;
			esac
		done
		case $flags in
		nojson*)
			for args in "--json $cmd" "$cmd --json"; do
				# shellcheck disable=SC2086
				"$CTL" --socket "$NOSOCK" $args $ops >/dev/null 2>"$SL_TMP/err" && fail "$args passed"
				grep -qx "stageloadctl: $cmd: has no --json.*" "$SL_TMP/err" || fail "$args: $(cat "$SL_TMP/err")"
			done
			;;
		esac

		# --- --socket before and after the command: both reach it ---
		for where in before after-name after-operands; do
			case $where,$flags in after-operands,*cmdline*) continue ;; esac
			case $where in
			before) set -- --socket "$NOSOCK" "$cmd" $ops ;;
			after-name) set -- "$cmd" --socket "$NOSOCK" $ops ;;
			after-operands) set -- "$cmd" $ops --socket="$NOSOCK" ;;
			esac
			rc=0
			timeout 20 "$CTL" "$@" >"$SL_TMP/out" 2>"$SL_TMP/err" || rc=$?
			# doctor reports a daemon that is down as a failed check
			# (exit 1, on stdout), as it reports the others.
			if [ "$cmd" = doctor ]; then
				[ "$rc" = 1 ] && grep -q "^\[FAIL\]  1  daemon not running at $NOSOCK" "$SL_TMP/out" ||
					fail "$* (socket $where the command): exit $rc: $(cat "$SL_TMP/out" "$SL_TMP/err")"
				continue
			fi
			[ "$rc" = 69 ] && grep -q "daemon not running at $NOSOCK" "$SL_TMP/err" ||
				fail "$* (socket $where the command): exit $rc: $(cat "$SL_TMP/err")"
		done
	done
done <<<"$entries"
[ "$(sed -n '/^Commands:/,/^$/p' <("$CTL" --help) | grep -c '^  [a-z]')" = "$ncmd" ] ||
	fail "--help does not list the $ncmd commands: $("$CTL" --help)"
ok "$ncmd commands: --help shows every option; errors in one style; --socket on either side"

# --- ranges are said ---
one_error "stageloadctl: events: --limit takes a whole number from 1 to 10000, not '0'" events --limit 0
one_error "stageloadctl: ps: --limit takes a whole number from 1 to 100000, not 'x'" ps --limit=x
one_error "stageloadctl: submit: --priority takes a whole number from -1000 to 1000, not '2000'" submit --priority 2000 -- true
one_error "stageloadctl: guard: --wait-free takes a percentage from 0 to 100 (40, 40%, 37.5) or a size (30G), not '140'" guard --wait-free 140 -- true
one_error "stageloadctl: submit: --wait-free takes a percentage from 0 to 100 (40, 40%, 37.5) or a size (30G), not '30X'" submit --wait-free 30X -- true
one_error "stageloadctl: history: --format takes table, json or csv, not 'xml'" history --format xml
one_error "stageloadctl: show: missing ID" show
one_error "stageloadctl: show: unexpected argument '2'" show 1 2
one_error "stageloadctl: unknown option '--bogus'" --bogus info
one_error "stageloadctl: unknown command 'bogus' (stageloadctl --help lists them)" bogus
ok "values out of range, operands and unknown commands in the same style"

# --- --json before and after the command, with a daemon ---
sl_start_daemon
id=$(ctl submit -- true)
ctl wait "$id" >/dev/null
while read -r name alias flags operands opts; do
	case $flags in nojson*) continue ;; esac
	case $operands in -) ops= ;; --_*) ops="-- true" ;; *) ops=$id ;; esac
	extra=
	[ "$name" = meter ] && extra="--count 1" # it runs until stopped
	# the job has ended: cancel's JSON form is that of its filter
	[ "$name" = cancel ] && ops="--state queued"
	for args in "--json $name $extra $ops" "$name $extra --json $ops" "$name $extra $ops --json"; do
		case $flags,$args in *cmdline*,*"-- true --json") continue ;; esac
		# shellcheck disable=SC2086
		# (doctor exits 1 here: a daemon reading fixture files fails its
		# comparison with the kernel)
		rc=0
		out=$(timeout 20 "$CTL" --socket "$SOCK" $args) || rc=$?
		[ "$rc" = 0 ] || { [ "$name" = doctor ] && [ "$rc" = 1 ]; } || fail "$args: exit $rc"
		# one JSON value, or JSON lines
		python3 -c '
import json, sys
try:
    json.loads(sys.argv[1])
except ValueError:
    [json.loads(line) for line in sys.argv[1].splitlines()]' "$out" ||
			fail "$args: not JSON: $out"
	done
done <<<"$entries"
ok "--json before and after every command with a JSON form"

# --- the man page and the completions are made from the same entries ---
"$CTL" --generate man >"$SL_TMP/stageloadctl.1" || fail "--generate man"
# The page is mdoc: rendered by mandoc (admin_man lints it), else groff.
if command -v mandoc >/dev/null; then
	mandoc -T ascii -O width=1000 "$SL_TMP/stageloadctl.1" 2>"$SL_TMP/err" | col -bx >"$SL_TMP/man.txt"
elif command -v groff >/dev/null; then
	# -ww: every warning; a roff mistake (an unescaped line start) is one
	groff -mdoc -Tascii -rLL=1000n -ww -P-cbou "$SL_TMP/stageloadctl.1" 2>"$SL_TMP/err" >"$SL_TMP/man.txt"
else
	fail "neither mandoc nor groff is installed (scripts/deps.sh --test): the man page cannot be read"
fi
[ ! -s "$SL_TMP/err" ] || fail "the man page does not render cleanly: $(cat "$SL_TMP/err")"
"$CTL" --generate complete-bash >"$SL_TMP/complete.bash" || fail "--generate complete-bash"
"$CTL" --generate complete-zsh >"$SL_TMP/_stageloadctl" || fail "--generate complete-zsh"
bash -n "$SL_TMP/complete.bash" || fail "the bash completion is not valid bash"
if command -v zsh >/dev/null; then
	zsh -n "$SL_TMP/_stageloadctl" || fail "the zsh completion is not valid zsh"
elif [ "${CI:-}" = true ]; then
	fail "zsh not installed (scripts/deps.sh --test): CI=true forbids not checking the zsh completion"
else
	echo "note: zsh not installed (scripts/deps.sh --test): the zsh completion is only read" >&2
fi
# complete WORDS...: what the bash completion offers for the last word
complete_bash() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _stageloadctl; echo "${COMPREPLY[*]}"' \
		- "$SL_TMP/complete.bash" stageloadctl "$@"
}
words=" $(complete_bash "") "
while read -r name alias flags operands opts; do
	# (mdoc sets "ID ..." where --help has "ID...")
	man_syn=$(sed -n '/^SYNOPSIS/,/^DESCRIPTION/p' "$SL_TMP/man.txt" | sed 's/^ *//; s/ \.\.\./.../g' |
		grep -E "^stageloadctl $name( |$)") || fail "the man page's synopsis lacks $name"
	help_syn=$("$CTL" "$name" --help | sed -n '1,/^$/p' | sed 's/^usage: //' | tr -s ' \n' ' ' | sed 's/ $//')
	[ "$man_syn" = "$help_syn" ] || fail "$name: man synopsis '$man_syn', --help '$help_syn'"
	for n in $name ${alias#-}; do
		case $words in *" $n "*) ;; *) fail "bash completion does not offer $n: $words" ;; esac
	done
	offered=" $(complete_bash "$name" --) "
	zsh_block=$(sed -n "/^\t\t$name[|)]/,/;;/p" "$SL_TMP/_stageloadctl")
	for o in $opts; do
		o=${o%=}
		case $offered in *" --$o "*) ;; *) fail "bash completion of $name lacks --$o: $offered" ;; esac
		grep -qE -- "--$o([^a-z-]|$)" <<<"$zsh_block" || fail "zsh completion of $name lacks --$o: $zsh_block"
		sed -n "/^     $name\b/,/^     [a-z]/p" "$SL_TMP/man.txt" | grep -qE -- "^ +(-[a-z], )?--$o\b" ||
			fail "the man page's $name lacks --$o"
	done
done <<<"$entries"
ok "the man page and the bash and zsh completions list every command and option"
