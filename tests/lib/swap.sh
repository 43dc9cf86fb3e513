# shellcheck shell=bash
# shellcheck disable=SC2034 # SWAP_* are read by the scripts that source this
# Real-kernel swap for tests (Linux, root): a small swapfile and a memory
# cgroup whose limit is below a job's size, so the job really swaps.
# Source it from bash; everything it creates is removed on exit (trap),
# whatever happens. Tests using it must hold the ctest RESOURCE_LOCK "swap".
#
#   swap_require_root             exit 77 (skip) unless root; 1 when CI=true
#   swap_file_create MIB          add a swapfile of MIB MiB (SWAP_FILE)
#   swap_cgroup_create NAME MIB   a memory cgroup limited to MIB MiB
#                                 (SWAP_CGROUP: its directory, SWAP_CG_VERSION)
#   swap_cgroup_add PID           move PID into it
#   swap_cgroup_run CMD ARGS...   start CMD inside it, in the background
#                                 (SWAP_PID: its pid)
#   swap_used_bytes               SwapTotal - SwapFree, in bytes
#   swap_watch BASE BYTES FILE    in the background, poll every 10 ms and
#                                 write to FILE the wall-clock ms at which
#                                 SwapTotal-SwapFree less the lowest value
#                                 seen (BASE at first) first exceeded BYTES,
#                                 and that lowest value to FILE.base
#                                 (SWAP_WATCH_PID; stopped at cleanup)
#   swap_now_ms                   wall clock in ms, without forking
#   swap_on_exit CMD              also run CMD at cleanup (before the rest)
#   swap_cleanup                  remove everything now (also the trap)

SWAP_FILE=
SWAP_CGROUP=
SWAP_CG_VERSION=
SWAP_PID=
SWAP_WATCH_PID=
_swap_exit_cmds=()

swap_log() {
	echo "swap.sh: $*" >&2
}

swap_require_root() {
	if [ "$(id -u)" -ne 0 ]; then
		if [ "${CI:-}" = true ]; then
			echo "FAIL: this test needs root (swapon, cgroups), and CI=true forbids skipping" >&2
			exit 1
		fi
		echo "SKIP: this test needs root to create a swapfile and a memory cgroup" >&2
		exit 77
	fi
	# Debian 12 keeps swapon and swapoff in `mount`, mkswap in util-linux.
	local why="" t
	for t in swapon:mount swapoff:mount mkswap:util-linux; do
		command -v "${t%%:*}" >/dev/null ||
			why="$why${why:+, }${t%%:*} (package ${t#*:})"
	done
	if [ -n "$why" ]; then
		why="not found on PATH: $why; apt-get install mount util-linux, or scripts/deps.sh --test"
		if [ "${CI:-}" = true ]; then
			echo "FAIL: $why" >&2
			exit 1
		fi
		echo "SKIP: $why" >&2
		exit 77
	fi
}

swap_on_exit() {
	_swap_exit_cmds+=("$1")
}

swap_used_bytes() {
	awk '/^SwapTotal:/ { t = $2 } /^SwapFree:/ { f = $2 }
	     END { printf "%d\n", (t - f) * 1024 }' /proc/meminfo
}

swap_now_ms() {
	local t=${EPOCHREALTIME/[.,]/}

	echo $((t / 1000))
}

# Builtins only, so a 10 ms poll costs little: sets _swap_used.
_swap_read_used() {
	local k v _ t=0 f=0

	while read -r k v _; do
		case $k in
		SwapTotal:) t=$v ;;
		SwapFree:) f=$v ;;
		esac
	done </proc/meminfo
	_swap_used=$(((t - f) * 1024))
}

swap_watch() {
	local base=$1 limit=$2 file=$3

	(
		low=$base
		while :; do
			_swap_read_used
			# Growth from the lowest value seen, as the daemon
			# measures it: swap freed after base was read would
			# otherwise hide a breach the daemon rightly saw.
			[ "$_swap_used" -lt "$low" ] && low=$_swap_used
			if [ $((_swap_used - low)) -gt "$limit" ]; then
				echo "$low" >"$file.base"
				swap_now_ms >"$file.tmp" && mv "$file.tmp" "$file"
				exit 0
			fi
			sleep 0.01
		done
	) &
	SWAP_WATCH_PID=$!
}

# The file goes where swap files work (not tmpfs): SL_SWAP_DIR or /var/tmp.
swap_file_create() {
	local mib=$1 dir=${SL_SWAP_DIR:-/var/tmp}

	SWAP_FILE=$(mktemp "$dir/sl-swap.XXXXXX") || return 1
	chmod 600 "$SWAP_FILE"
	# fallocate is instant, but some filesystems refuse swap on
	# preallocated extents; dd writes real blocks everywhere.
	if ! { fallocate -l "${mib}M" "$SWAP_FILE" 2>/dev/null &&
		mkswap "$SWAP_FILE" >/dev/null 2>&1 &&
		swapon "$SWAP_FILE" 2>/dev/null; }; then
		dd if=/dev/zero of="$SWAP_FILE" bs=1M count="$mib" status=none || return 1
		mkswap "$SWAP_FILE" >/dev/null || return 1
		swapon "$SWAP_FILE" || { swap_log "swapon $SWAP_FILE failed"; return 1; }
	fi
	swap_log "swapfile $SWAP_FILE ($mib MiB) on"
}

# v2 where the unified hierarchy has the memory controller (at
# /sys/fs/cgroup, or at /sys/fs/cgroup/unified in hybrid setups), else v1.
_swap_cg_v2_root() {
	local r

	for r in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [ -f "$r/cgroup.controllers" ] &&
			grep -qw memory "$r/cgroup.controllers"; then
			echo "$r"
			return 0
		fi
	done
	return 1
}

swap_cgroup_create() {
	local name=$1 mib=$2 root bytes

	bytes=$((mib * 1024 * 1024))
	if root=$(_swap_cg_v2_root); then
		SWAP_CG_VERSION=2
		if ! grep -qw memory "$root/cgroup.subtree_control"; then
			echo +memory >"$root/cgroup.subtree_control" || return 1
		fi
		SWAP_CGROUP=$root/$name
		mkdir "$SWAP_CGROUP" || return 1
		echo "$bytes" >"$SWAP_CGROUP/memory.max" || return 1
		[ -f "$SWAP_CGROUP/memory.swap.max" ] &&
			echo max >"$SWAP_CGROUP/memory.swap.max"
	elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
		SWAP_CG_VERSION=1
		SWAP_CGROUP=/sys/fs/cgroup/memory/$name
		mkdir "$SWAP_CGROUP" || return 1
		echo "$bytes" >"$SWAP_CGROUP/memory.limit_in_bytes" || return 1
		# The group must be allowed to swap at all.
		echo 60 >"$SWAP_CGROUP/memory.swappiness" 2>/dev/null
	else
		swap_log "no memory cgroup controller (v1 or v2) found"
		return 1
	fi
	swap_log "cgroup v$SWAP_CG_VERSION $SWAP_CGROUP limited to $mib MiB"
}

swap_cgroup_add() {
	echo "$1" >"$SWAP_CGROUP/cgroup.procs"
}

# The command enters the cgroup before it execs, so every byte it
# allocates is charged there.
swap_cgroup_run() {
	bash -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' \
		swap-run "$SWAP_CGROUP" "$@" &
	SWAP_PID=$!
}

_swap_cgroup_pids() {
	[ -n "$SWAP_CGROUP" ] && [ -f "$SWAP_CGROUP/cgroup.procs" ] &&
		cat "$SWAP_CGROUP/cgroup.procs"
}

swap_cleanup() {
	local cmd pids deadline

	trap - EXIT INT TERM
	if [ -n "$SWAP_WATCH_PID" ]; then
		kill "$SWAP_WATCH_PID" 2>/dev/null
		wait "$SWAP_WATCH_PID" 2>/dev/null
		SWAP_WATCH_PID=
	fi
	for cmd in "${_swap_exit_cmds[@]}"; do
		eval "$cmd" || true
	done
	_swap_exit_cmds=()
	if [ -n "$SWAP_CGROUP" ] && [ -d "$SWAP_CGROUP" ]; then
		# Empty the group (only processes a test put there), then
		# remove it; a bounded wait for the kernel to let go.
		deadline=$((SECONDS + 20))
		while pids=$(_swap_cgroup_pids) && [ -n "$pids" ] &&
			[ $SECONDS -lt $deadline ]; do
			# shellcheck disable=SC2086 # one pid per word
			kill -KILL $pids 2>/dev/null
			sleep 0.1
		done
		while ! rmdir "$SWAP_CGROUP" 2>/dev/null &&
			[ $SECONDS -lt $deadline ]; do
			sleep 0.1
		done
		[ -d "$SWAP_CGROUP" ] && swap_log "could not remove $SWAP_CGROUP"
	fi
	SWAP_CGROUP=
	if [ -n "$SWAP_FILE" ]; then
		if grep -q "^$SWAP_FILE " /proc/swaps; then
			swapoff "$SWAP_FILE" || swap_log "swapoff $SWAP_FILE failed"
		fi
		rm -f "$SWAP_FILE"
		swap_log "swapfile $SWAP_FILE removed"
	fi
	SWAP_FILE=
}

trap swap_cleanup EXIT
trap 'swap_cleanup; exit 130' INT
trap 'swap_cleanup; exit 143' TERM
