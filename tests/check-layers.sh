#!/usr/bin/env bash
# Checks that daemon/'s modules form layers, calls and includes going down
# the layers only, so each module can be read, tested and changed with only
# the ones beneath it in mind: the module graph of daemon/'s quoted includes
# and the module graph of its objects' symbol references (nm) must both be
# free of cycles, and a few explicit rules on includes must hold.
#
# A module is a file's name without its extension, cut at the first '-':
# jobs.c, jobs-enforce.c, jobs.h and jobs-internal.h are all module "jobs".
# Includes of headers that are not in daemon/ (proto.h, units.h, the
# generated version.h) and symbols defined outside daemon's objects (libc,
# libuv, sqlite, slproto) are ignored.
#
# The order: docs/architecture.md's table "The layers" puts every file of
# daemon/ in a layer; an include or a call from a file to one in a higher
# layer is refused, as is a file in no layer (--layers FILE: another table;
# this tree's daemon/ is always held to its own).
#
# Usage: check-layers.sh [--src DIR] [--objs DIR | --includes-only]
#                        [--layers FILE] [BUILD]
#        check-layers.sh --self-test
#   BUILD    the build directory (default: build/ at the top of the tree);
#            objects from BUILD/CMakeFiles/{sldaemon,stageloadd}.dir/daemon/
#   --src    the daemon source directory (default: daemon/ of this tree)
#   --objs   take the objects (*.o) from DIR instead of BUILD
#   --includes-only  check the includes and the rules only
# On success prints both module graphs, lowest layer first. Exit 0 when all
# holds, 1 on a cycle or a broken rule, 2 on a usage error (no objects: build
# first). Uses coreutils, grep, awk and nm ($NM, default nm); --self-test also
# a C compiler ($CC, default cc).
set -euo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NM=${NM:-nm}

usage() {
	echo "check-layers: $*" >&2
	echo "usage: check-layers.sh [--src DIR] [--objs DIR | --includes-only] [BUILD]" >&2
	echo "       check-layers.sh --self-test" >&2
	exit 2
}

# --- module graphs ---------------------------------------------------------

# graph KIND MAXEV: reads lines "N<TAB>module" and
# "E<TAB>from<TAB>to<TAB>evidence"; builds the module graph (edges between
# different modules only) and peels it bottom up (Kahn's algorithm on
# out-degrees: a module whose successors are all peeled is peeled, one layer
# above the highest of them). If everything peels, prints the graph lowest
# layer first and exits 0. Otherwise every module left is on a cycle or
# depends on one; for each edge between two such modules, a shortest path
# back (breadth first) closes the shortest cycle through that edge, so every
# edge on any cycle is shown. Prints each cycle once, with up to MAXEV
# pieces of evidence per edge (0: all), and exits 1.
graph() {
	awk -F '\t' -v kind="$1" -v maxev="$2" '
	function addnode(m) {
		if (!(m in isnode)) {
			isnode[m] = 1
			nodes[++nn] = m
		}
	}
	# a path from s to d through modules not peeled, as "s d ..." reversed
	# into cyc[1..]; returns its length (0: none)
	function pathto(s, d,    q, prev, head, tail, x, y, j, n, r) {
		split("", prev)
		head = 1; tail = 0
		q[++tail] = s
		prev[s] = ""
		while (head <= tail && !(d in prev)) {
			x = q[head++]
			for (j = 1; j <= ns[x]; j++) {
				y = succ[x, j]
				if ((y in layer) || (y in prev))
					continue
				prev[y] = x
				q[++tail] = y
			}
		}
		if (!(d in prev))
			return 0
		n = 0
		for (x = d; x != s; x = prev[x])
			r[++n] = x
		r[++n] = s
		for (j = 1; j <= n; j++)
			path[j] = r[n - j + 1]
		return n
	}
	$1 == "N" { addnode($2); next }
	$1 == "E" {
		addnode($2); addnode($3)
		if ($2 == $3)
			next
		k = $2 SUBSEP $3
		edge[k] = 1
		if ((k SUBSEP $4) in seenev)
			next
		seenev[k SUBSEP $4] = 1
		ev[k, ++nev[k]] = $4
		next
	}
	END {
		for (i = 2; i <= nn; i++) {
			x = nodes[i]
			for (j = i - 1; j >= 1 && nodes[j] > x; j--)
				nodes[j + 1] = nodes[j]
			nodes[j + 1] = x
		}
		for (i = 1; i <= nn; i++) {
			u = nodes[i]
			ns[u] = 0
			for (j = 1; j <= nn; j++)
				if ((u SUBSEP nodes[j]) in edge)
					succ[u, ++ns[u]] = nodes[j]
		}
		left = nn; top = 0
		for (changed = 1; changed; ) {
			changed = 0
			for (i = 1; i <= nn; i++) {
				u = nodes[i]
				if (u in layer)
					continue
				lv = 0
				for (j = 1; j <= ns[u]; j++) {
					v = succ[u, j]
					if (!(v in layer))
						break
					if (layer[v] + 1 > lv)
						lv = layer[v] + 1
				}
				if (j <= ns[u])
					continue
				layer[u] = lv
				if (lv > top)
					top = lv
				left--
				changed = 1
			}
		}
		if (left == 0) {
			printf "%s graph: no cycles; %d modules, lowest layer first:\n", kind, nn
			for (l = 0; l <= top; l++)
				for (i = 1; i <= nn; i++) {
					u = nodes[i]
					if (layer[u] != l)
						continue
					line = "  [" l "] " u " ->"
					if (ns[u] == 0)
						line = line " (nothing)"
					for (j = 1; j <= ns[u]; j++)
						line = line " " succ[u, j]
					print line
				}
			exit 0
		}
		nc = 0
		for (i = 1; i <= nn; i++) {
			u = nodes[i]
			if (u in layer)
				continue
			for (j = 1; j <= ns[u]; j++) {
				v = succ[u, j]
				if (v in layer)
					continue
				n = pathto(v, u)
				if (n == 0)
					continue
				# the cycle u -> path[1] (= v) ... path[n] (= u), started
				# at its smallest module so each cycle is printed once
				c[1] = u
				for (m = 1; m < n; m++)
					c[m + 1] = path[m]
				lo = 1
				for (m = 2; m <= n; m++)
					if (c[m] < c[lo])
						lo = m
				key = ""
				for (m = 0; m < n; m++) {
					cn[m + 1] = c[(lo - 1 + m) % n + 1]
					key = key cn[m + 1] " -> "
				}
				key = key cn[1]
				if (key in seencyc)
					continue
				seencyc[key] = 1
				cyc[++nc] = key
				clen[nc] = n
				for (m = 1; m <= n; m++) {
					cnode[nc, m] = cn[m]
					incyc[cn[m]] = 1
				}
			}
		}
		for (i = 1; i <= nc; i++)
			order[i] = i
		for (i = 2; i <= nc; i++) {
			x = order[i]
			for (j = i - 1; j >= 1 && (clen[order[j]] > clen[x] || \
			    (clen[order[j]] == clen[x] && cyc[order[j]] > cyc[x])); j--)
				order[j + 1] = order[j]
			order[j + 1] = x
		}
		for (i = 1; i <= nc; i++) {
			x = order[i]
			print kind " cycle: " cyc[x]
			for (m = 1; m <= clen[x]; m++) {
				a = cnode[x, m]
				b = cnode[x, m % clen[x] + 1]
				k = a SUBSEP b
				line = "    " a " -> " b ": "
				shown = nev[k]
				if (maxev > 0 && shown > maxev)
					shown = maxev
				for (e = 1; e <= shown; e++)
					line = line (e > 1 ? ", " : "") ev[k, e]
				if (shown < nev[k])
					line = line " (+" (nev[k] - shown) " more)"
				print line
			}
		}
		mods = ""
		for (i = 1; i <= nn; i++)
			if (nodes[i] in incyc)
				mods = mods " " nodes[i]
		printf "%s graph: %d cycle%s among modules:%s\n", kind, nc, \
		    nc == 1 ? "" : "s", mods
		exit 1
	}'
}

# The module of a file or object name: no directory, no ".o", no extension,
# cut at the first "-".
MODULE_AWK='function module(f) {
	sub(/.*\//, "", f)
	sub(/\.o$/, "", f)
	sub(/\.[^.]*$/, "", f)
	sub(/-.*/, "", f)
	return f
}'

# --- the checks ------------------------------------------------------------

# includes SRCDIR SHOWN: "file<TAB>line<TAB>header" for each quoted include
# of a header that exists in SRCDIR, files named SHOWN/file.
includes() {
	local srcdir=$1 shown=$2
	(cd "$srcdir" && ls) | awk -v shown="$shown" '
	NR == FNR { exists[$0] = 1; next }
	/^[ \t]*#[ \t]*include[ \t]*"/ {
		h = $0
		sub(/^[^"]*"/, "", h)
		sub(/".*/, "", h)
		f = FILENAME
		sub(/.*\//, "", f)
		if (h in exists)
			printf "%s/%s\t%d\t%s\n", shown, f, FNR, h
	}' - "${SOURCES[@]}"
}

# check_includes: the include graph (exit status of graph)
check_includes() {
	{
		for f in "${SOURCES[@]}"; do
			printf 'N\t%s\n' "$f"
		done | awk -F '\t' "$MODULE_AWK"'{ printf "N\t%s\n", module($2) }'
		printf '%s\n' "$INCLUDES" | awk -F '\t' "$MODULE_AWK"'
		NF == 3 { printf "E\t%s\t%s\t%s:%d \"%s\"\n", module($1), module($3), $1, $2, $3 }'
	} | graph include 0
}

# check_rules: the explicit rules on includes, checked file by file
check_rules() {
	printf '%s\n' "$INCLUDES" | awk -F '\t' '
	function broken(why) {
		printf "include rule: %s:%d includes \"%s\": %s\n", $1, $2, $3, why
		bad = 1
	}
	NF != 3 { next }
	{ f = $1; sub(/.*\//, "", f) }
	f == "server.c" && ($3 == "control.h" || $3 == "jobs.h" || $3 == "sampler.h") {
		broken("server.c includes none of control.h, jobs.h, sampler.h")
	}
	f == "sampler.c" && ($3 == "jobs.h" || $3 == "server.h") {
		broken("sampler.c includes neither jobs.h nor server.h")
	}
	f ~ /^jobs.*\.c$/ && $3 == "server.h" {
		broken("no jobs*.c includes server.h")
	}
	END { exit bad }'
}

# check_links OBJECT...: the link graph, from each object's defined and
# undefined global symbols (exit status of graph)
check_links() {
	local o syms=
	for o in "$@"; do
		syms+="@obj $(basename "$o")"$'\n'
		syms+=$("$NM" -P -g "$o") || {
			echo "check-layers: $NM cannot read $o" >&2
			return 2
		}
		syms+=$'\n'
	done
	printf '%s' "$syms" | awk "$MODULE_AWK"'
	$1 == "@obj" && NF == 2 { obj = $2; mod = module(obj); mods[mod] = 1; next }
	NF >= 2 && ($2 == "U" || $2 == "w") { use[++nu] = mod; usesym[nu] = $1; useobj[nu] = obj; next }
	NF >= 2 && $2 ~ /^[A-TV-Z]$/ {
		if (!((mod SUBSEP $1) in defby)) {
			defby[mod SUBSEP $1] = 1
			def[$1] = def[$1] " " mod
		}
	}
	END {
		for (m in mods)
			printf "N\t%s\n", m
		# one piece of evidence per symbol: "name (the objects using it)"
		for (i = 1; i <= nu; i++) {
			s = usesym[i]
			if (!(s in def) || ((use[i] SUBSEP s) in defby))
				continue
			k = use[i] SUBSEP s
			o = useobj[i]
			sub(/\.o$/, "", o)
			if (!(k in users)) {
				key[++nk] = k
				users[k] = o
			} else if (index(", " users[k] ", ", ", " o ", ") == 0) {
				users[k] = users[k] ", " o
			}
		}
		for (i = 1; i <= nk; i++) {
			split(key[i], ks, SUBSEP)
			n = split(def[ks[2]], d, " ")
			for (j = 1; j <= n; j++)
				printf "E\t%s\t%s\t%s (%s)\n", ks[1], d[j], ks[2], users[key[i]]
		}
	}' | graph link 4
}

# --- layer order -----------------------------------------------------------

# layer_ranks TABLE: "rank<TAB>pattern" for each file named in the table of
# TABLE's "## The layers" section, the first row the highest rank. Names in
# backquotes that end in .c or .h, globs (jobs-*.c) included.
layer_ranks() {
	awk '
	/^## / { inside = ($0 == "## The layers"); next }
	!inside || !/^\|/ { next }
	/^\|[ -]*\|/ { next }          # the separator row
	++row == 1 { next }            # the header row
	{
		split($0, col, "|")
		n = split(col[3], tok, "`")
		for (i = 2; i <= n; i += 2)
			if (tok[i] ~ /^[A-Za-z0-9_*.-]+\.[ch]$/)
				names[row] = names[row] " " tok[i]
	}
	END {
		for (r = 2; r <= row; r++) {
			k = split(names[r], t, " ")
			for (i = 1; i <= k; i++)
				printf "%d\t%s\n", row - r, t[i]
		}
	}' "$1"
}

# rank_of FILE: the rank of a daemon file (basename), from RANKS: its own
# name, else a glob that matches it; a header without a row of its own
# (jobs.h, jobs-internal.h) takes the rank of its module's .c file.
rank_of() {
	local f=$1 r p try
	for try in "$f" "${f%.h}.c" "${f%%-*}.c" "${f%%.*}.c"; do
		while IFS=$'\t' read -r r p; do
			[ "$p" = "$try" ] && { echo "$r"; return; }
		done <<<"$RANKS"
		while IFS=$'\t' read -r r p; do
			# shellcheck disable=SC2053 # p is a glob on purpose
			[[ $try == $p ]] && { echo "$r"; return; }
		done <<<"$RANKS"
		[[ $f == *.h ]] || break
	done
}

# check_order OBJECT...: every include and every call goes down the table's
# layers or stays in one; every file is in a layer
check_order() {
	local f r bad=0 ranks="" o
	for f in "${SOURCES[@]}"; do
		f=$(basename "$f")
		r=$(rank_of "$f")
		if [ -z "$r" ]; then
			echo "layer rule: $shown/$f is in no layer of $LAYERS (\"The layers\")"
			bad=1
			continue
		fi
		ranks+="R"$'\t'"$f"$'\t'"$r"$'\n'
	done
	{
		printf '%s' "$ranks"
		printf '%s\n' "$INCLUDES" | awk -F '\t' 'NF == 3 {
			f = $1; sub(/.*\//, "", f)
			printf "E\t%s\t%s\t%s:%d includes \"%s\"\n", f, $3, $1, $2, $3 }'
		for o in "$@"; do
			echo "@obj $(basename "$o" .o)"
			"$NM" -P -g "$o"
		done | awk '
		$1 == "@obj" { obj = $2; next }
		NF >= 2 && ($2 == "U" || $2 == "w") { use[++nu] = obj; usesym[nu] = $1; next }
		NF >= 2 && $2 ~ /^[A-TV-Z]$/ { if (!($1 in def)) def[$1] = obj }
		END {
			for (i = 1; i <= nu; i++)
				if ((usesym[i] in def) && def[usesym[i]] != use[i])
					printf "E\t%s\t%s\t%s calls %s\n", use[i], def[usesym[i]], use[i], usesym[i]
		}'
	} | awk -F '\t' -v shown="$shown" '
	$1 == "R" { rank[$2] = $3; next }
	$1 == "E" && ($2 in rank) && ($3 in rank) && rank[$2] < rank[$3] {
		k = $2 SUBSEP $3
		if (!(k in seen)) {
			seen[k] = 1
			printf "layer rule: %s/%s (layer %d) -> %s/%s (layer %d) goes up: %s\n", shown, $2, rank[$2], shown, $3, rank[$3], $4
		}
		bad = 1
	}
	END { exit bad }' || bad=1
	return "$bad"
}

# --- the self-test ---------------------------------------------------------

self_test() {
	local tmp failures=0 cc=${CC:-cc}
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-layers.XXXXXX")
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" EXIT

	# expect CODE TEXT WHAT ARGS...: check-layers.sh ARGS exits CODE and
	# prints TEXT (TEXT starting with "!": does not print the rest)
	expect() {
		local want=$1 text=$2 what=$3 out code=0
		shift 3
		out=$(bash "$SELF" "$@" 2>&1) || code=$?
		if [ "$code" -ne "$want" ]; then
			echo "FAIL: $what: exit $code, want $want; output:" >&2
			printf '%s\n' "$out" | sed 's/^/    /' >&2
			failures=$((failures + 1))
		elif [ "${text#!}" != "$text" ] && grep -qF -- "${text#!}" <<<"$out"; then
			echo "FAIL: $what: printed '${text#!}'; output:" >&2
			printf '%s\n' "$out" | sed 's/^/    /' >&2
			failures=$((failures + 1))
		elif [ "${text#!}" = "$text" ] && ! grep -qF -- "$text" <<<"$out"; then
			echo "FAIL: $what: did not print '$text'; output:" >&2
			printf '%s\n' "$out" | sed 's/^/    /' >&2
			failures=$((failures + 1))
		else
			echo "ok: $what"
		fi
	}

	# an include cycle a -> b -> a, through a header of b and a file b-impl.c
	mkdir "$tmp/cyclic"
	printf '#include "b.h"\n#include "proto.h"\nint a;\n' >"$tmp/cyclic/a.c"
	printf '#include "a.h"\n' >"$tmp/cyclic/a.h"
	printf '#include "a.h"\n' >"$tmp/cyclic/b.h"
	printf '#include "b.h"\nint b;\n' >"$tmp/cyclic/b-impl.c"
	expect 1 'include cycle: a -> b -> a' "an include cycle fails" \
		--src "$tmp/cyclic" --includes-only
	expect 1 'b -> a: '"$tmp/cyclic"'/b.h:1 "a.h"' "the cycle names the include lines" \
		--src "$tmp/cyclic" --includes-only

	# a longer cycle x -> y -> z -> x, and w above it but not on it
	mkdir "$tmp/cyclic3"
	printf '#include "y.h"\n' >"$tmp/cyclic3/x.c"
	printf '#include "z.h"\n' >"$tmp/cyclic3/y.h"
	printf '#include "x.h"\n' >"$tmp/cyclic3/z.h"
	printf '\n' >"$tmp/cyclic3/x.h"
	printf '#include "x.h"\n' >"$tmp/cyclic3/w.c"
	expect 1 'include cycle: x -> y -> z -> x' "a longer include cycle fails" \
		--src "$tmp/cyclic3" --includes-only
	expect 1 'include graph: 1 cycle among modules: x y z' \
		"a module above a cycle is not on it" --src "$tmp/cyclic3" --includes-only

	# layers top -> mid -> low, and top -> low; proto.h is not ours
	mkdir "$tmp/layered"
	printf '#include "mid.h"\n#include "low.h"\n#include "proto.h"\n' >"$tmp/layered/top.c"
	printf '#include "low.h"\n' >"$tmp/layered/mid-x.c"
	printf '#include "low.h"\n' >"$tmp/layered/mid.h"
	printf '/* nothing */\n' >"$tmp/layered/low.h"
	printf '#include "low.h"\n' >"$tmp/layered/low.c"
	expect 0 '[2] top -> low mid' "a layered tree passes" \
		--src "$tmp/layered" --includes-only
	expect 0 '!cycle:' "a layered tree has no cycle" \
		--src "$tmp/layered" --includes-only

	# no cycle, but server.c includes control.h
	mkdir "$tmp/rule"
	printf '#include "control.h"\n' >"$tmp/rule/server.c"
	printf '\n' >"$tmp/rule/control.h"
	expect 1 "include rule: $tmp/rule/server.c:1 includes \"control.h\"" \
		"a broken include rule fails" --src "$tmp/rule" --includes-only

	# link graphs: ping uses pong and pong uses ping; then only up uses down
	mkdir "$tmp/cyc-objs" "$tmp/dag-objs" "$tmp/empty"
	printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' >"$tmp/ping.c"
	printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' >"$tmp/pong-impl.c"
	printf 'int down(int);\nint up(int n) { return down(n) + 1; }\n' >"$tmp/up.c"
	printf 'int down(int n) { return n * 2; }\n' >"$tmp/down.c"
	"$cc" -c -o "$tmp/cyc-objs/ping.c.o" "$tmp/ping.c"
	"$cc" -c -o "$tmp/cyc-objs/pong-impl.c.o" "$tmp/pong-impl.c"
	"$cc" -c -o "$tmp/dag-objs/up.c.o" "$tmp/up.c"
	"$cc" -c -o "$tmp/dag-objs/down.c.o" "$tmp/down.c"
	expect 1 'link cycle: ping -> pong -> ping' "a link cycle fails" \
		--src "$tmp/layered" --objs "$tmp/cyc-objs"
	expect 1 'pong -> ping: ping (pong-impl.c)' "the cycle names the symbols" \
		--src "$tmp/layered" --objs "$tmp/cyc-objs"
	expect 0 '[1] up -> down' "a layered link graph passes" \
		--src "$tmp/layered" --objs "$tmp/dag-objs"

	# a build directory as CMake lays it out: up -> down -> gone -> up,
	# until gone.c is deleted and only its object is left behind
	local objdir=$tmp/build/CMakeFiles/sldaemon.dir/daemon f
	mkdir -p "$objdir" "$tmp/linked"
	printf 'int down(int);\nint up(int n) { return down(n) + 1; }\n' >"$tmp/linked/up.c"
	printf 'int gone(int);\nint down(int n) { return n ? gone(n) : 0; }\n' >"$tmp/linked/down.c"
	printf 'int up(int);\nint gone(int n) { return up(n - 1); }\n' >"$tmp/linked/gone.c"
	for f in up down gone; do
		"$cc" -c -o "$objdir/$f.c.o" "$tmp/linked/$f.c"
	done
	expect 1 'link cycle: down -> gone -> up -> down' "a link cycle in a build directory fails" \
		--src "$tmp/linked" "$tmp/build"
	rm "$tmp/linked/gone.c"
	expect 0 '[1] up -> down' "the object of a deleted source is ignored" \
		--src "$tmp/linked" "$tmp/build"
	expect 0 'gone.c is gone' "an ignored object is named" \
		--src "$tmp/linked" "$tmp/build"

	# the layer table: hi above lo; lo calling (and including) hi goes up,
	# though the two are no cycle; a file in no row is refused too
	mkdir "$tmp/ordered" "$tmp/ordered-objs"
	# shellcheck disable=SC2016 # backquotes are the table's, not a command
	printf '## The layers\n\n| layer | files | owns |\n|---|---|---|\n| hi | `hi.c` | |\n| lo | `lo.c`, `lo-*.c` | |\n\n## Next\n' >"$tmp/layers.md"
	printf 'int lo(int);\nint hi(int n) { return lo(n); }\n' >"$tmp/ordered/hi.c"
	printf '/* hi */\n' >"$tmp/ordered/hi.h"
	printf 'int lo(int n) { return n; }\n' >"$tmp/ordered/lo.c"
	"$cc" -c -o "$tmp/ordered-objs/hi.c.o" "$tmp/ordered/hi.c"
	"$cc" -c -o "$tmp/ordered-objs/lo.c.o" "$tmp/ordered/lo.c"
	expect 0 'check-layers: ok' "calls down the table pass" \
		--src "$tmp/ordered" --objs "$tmp/ordered-objs" --layers "$tmp/layers.md"
	printf '#include "hi.h"\nint hi(int);\nint up(int n) { return hi(n); }\n' >"$tmp/ordered/lo-up.c"
	"$cc" -c -o "$tmp/ordered-objs/lo-up.c.o" "$tmp/ordered/lo-up.c"
	expect 1 "lo-up.c (layer 0) -> $tmp/ordered/hi.c (layer 1) goes up: lo-up.c calls hi" \
		"an upward call is refused" \
		--src "$tmp/ordered" --objs "$tmp/ordered-objs" --layers "$tmp/layers.md"
	expect 1 "goes up: $tmp/ordered/lo-up.c:1 includes \"hi.h\"" \
		"an upward include is refused" \
		--src "$tmp/ordered" --includes-only --layers "$tmp/layers.md"
	rm "$tmp/ordered/lo-up.c" "$tmp/ordered-objs/lo-up.c.o"
	printf 'int stray;\n' >"$tmp/ordered/stray.c"
	expect 1 "stray.c is in no layer of $tmp/layers.md" "a file in no layer is refused" \
		--src "$tmp/ordered" --includes-only --layers "$tmp/layers.md"

	# usage errors
	expect 2 'build first' "a build directory without objects is a usage error" \
		--src "$tmp/layered" "$tmp/empty"
	expect 2 'build first' "an objects directory without objects is a usage error" \
		--src "$tmp/layered" --objs "$tmp/empty"
	expect 2 'no sources' "a source directory without sources is a usage error" \
		--src "$tmp/empty" --includes-only
	expect 2 'usage' "an unknown option is a usage error" --bogus

	if [ "$failures" -ne 0 ]; then
		echo "check-layers self-test: $failures failed" >&2
		exit 1
	fi
	echo "check-layers self-test: all passed"
	exit 0
}

# --- main ------------------------------------------------------------------

src=$ROOT/daemon
objs=
LAYERS=
build=
links=1
while [ $# -gt 0 ]; do
	case $1 in
	--self-test) [ $# -eq 1 ] || usage "--self-test takes no other arguments"; self_test ;;
	--src) [ $# -ge 2 ] || usage "--src needs a directory"; src=$2; shift 2 ;;
	--objs) [ $# -ge 2 ] || usage "--objs needs a directory"; objs=$2; shift 2 ;;
	--includes-only) links=0; shift ;;
	--layers) [ $# -ge 2 ] || usage "--layers needs a file"; LAYERS=$2; shift 2 ;;
	-h | --help) usage "checks daemon/'s include and link graphs for cycles" ;;
	--) shift; break ;;
	-*) usage "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -le 1 ] || usage "one build directory at most"
[ $# -eq 0 ] || build=$1
[ -n "$build" ] || build=$ROOT/build
[ -z "$objs" ] || [ $# -eq 0 ] || usage "--objs and a build directory exclude each other"
[ -d "$src" ] || usage "no source directory $src"
src=${src%/}
# files are named as daemon/x.c when SRC is this tree's daemon/
if [ "$(cd "$src" && pwd -P)" = "$(cd "$ROOT" && pwd -P)/daemon" ]; then
	shown=daemon
	# this tree's daemon is held to this tree's table
	[ -n "$LAYERS" ] || LAYERS=$ROOT/docs/architecture.md
else
	shown=$src
fi

shopt -s nullglob
SOURCES=("$src"/*.c "$src"/*.h)
[ ${#SOURCES[@]} -gt 0 ] || usage "no sources (*.c, *.h) in $src"

OBJECTS=()
if [ "$links" -eq 1 ]; then
	if [ -n "$objs" ]; then
		[ -d "$objs" ] || usage "no objects directory $objs"
		OBJECTS=("$objs"/*.o)
		[ ${#OBJECTS[@]} -gt 0 ] || usage "no objects (*.o) in $objs: build first"
	else
		lib=$build/CMakeFiles/sldaemon.dir/daemon
		for o in "$lib"/*.c.o "$build"/CMakeFiles/stageloadd.dir/daemon/stageloadd.c.o; do
			[ -f "$o" ] || continue
			s=$(basename "$o" .o)
			# CMake leaves the objects of sources that are gone behind
			if [ ! -f "$src/$s" ]; then
				echo "check-layers: ignoring $o: $shown/$s is gone" >&2
				continue
			fi
			if [ "$src/$s" -nt "$o" ]; then
				echo "check-layers: warning: $o is older than $shown/$s: rebuild for a current link graph" >&2
			fi
			OBJECTS+=("$o")
		done
		[ ${#OBJECTS[@]} -gt 0 ] ||
			usage "no daemon objects in $lib: build first (cmake --build $build)"
	fi
fi
shopt -u nullglob

INCLUDES=$(includes "$src" "$shown")
status=0
problems=()

rc=0
check_includes || rc=$?
[ "$rc" -le 1 ] || exit 2
[ "$rc" -eq 0 ] || { status=1; problems+=("include cycles"); }

rc=0
check_rules || rc=$?
[ "$rc" -le 1 ] || exit 2
[ "$rc" -eq 0 ] || { status=1; problems+=("include rules broken"); }

if [ "$links" -eq 1 ]; then
	rc=0
	check_links "${OBJECTS[@]}" || rc=$?
	[ "$rc" -le 1 ] || exit 2
	[ "$rc" -eq 0 ] || { status=1; problems+=("link cycles"); }
fi

if [ -n "$LAYERS" ]; then
	RANKS=$(layer_ranks "$LAYERS")
	if [ -z "$RANKS" ]; then
		echo "check-layers: no layer table (\"## The layers\") in $LAYERS" >&2
		exit 2
	fi
	rc=0
	check_order "${OBJECTS[@]}" || rc=$?
	[ "$rc" -eq 0 ] || { status=1; problems+=("calls or includes going up"); }
fi

if [ "$status" -eq 0 ]; then
	echo "check-layers: ok"
else
	msg=$(printf '%s, ' "${problems[@]}")
	echo "check-layers: FAIL: ${msg%, }"
fi
exit "$status"
