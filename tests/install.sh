#!/usr/bin/env bash
# cmake --install puts the binaries, the header, the library and
# stageload.pc in place; a program built with nothing but
# `pkg-config --cflags --libs stageload` talks to the installed daemon.
. "$(dirname "$0")/lib/cli.sh"
sl_setup

BUILD=$(cd "$SL_BIN/.." && pwd)
PREFIX=$SL_TMP/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >"$SL_TMP/install.log" 2>&1 ||
	fail "cmake --install failed: $(cat "$SL_TMP/install.log")"
for f in bin/stageloadd bin/stageloadctl include/stageload.h \
	share/man/man1/stageloadctl.1 share/bash-completion/completions/stageloadctl \
	share/zsh/site-functions/_stageloadctl share/man/man8/stageloadd.8 \
	share/man/man5/stageload.conf.5 share/fish/vendor_completions.d/stageloadctl.fish \
	share/stageload/stageload.conf.example; do
	[ -s "$PREFIX/$f" ] || fail "$f not installed"
done
pc=$(find "$PREFIX" -name stageload.pc | head -n 1)
[ -n "$pc" ] || fail "stageload.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libstageload.* >/dev/null 2>&1 || fail "libstageload not in $libdir"
ok "installed: binaries, header, library, $(basename "$pc"), man pages, completions, example config"

PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs stageload) || fail "pkg-config stageload"
# A sanitizer build's library needs the sanitizer runtime in the program.
san=
[ "${SL_SANITIZE:-OFF}" = ON ] && san="-fsanitize=address,undefined"
# shellcheck disable=SC2086 # flags are words
cc -Wall -Wextra -Werror $san -o "$SL_TMP/consumer" \
	"$SL_SRC/tests/install/consumer.c" $flags ||
	fail "consumer does not build from the installed files"
ok "a client builds with pkg-config alone"

if command -v nm >/dev/null; then
	so=$(find "$libdir" -name 'libstageload.so*' -type f | head -n 1)
	if [ -n "$so" ]; then
		extra=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /^sl_/ {print $3}')
		[ -z "$extra" ] || fail "libstageload exports more than sl_*: $extra"
		ok "libstageload exports the sl_* API only"
	fi
fi

SL_BIN=$PREFIX/bin sl_start_daemon
out=$(LD_LIBRARY_PATH=$libdir "$SL_TMP/consumer" "$SOCK") ||
	fail "consumer failed: $out"
case $out in
"version="*" has_sample="[01]" job=queued held=1") ok "consumer talks to the installed daemon: $out" ;;
*) fail "unexpected consumer output: $out" ;;
esac
