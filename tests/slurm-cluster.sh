#!/usr/bin/env bash
# A real two-node Slurm cluster on loopback (munged, slurmctld, two
# `slurmd -N`, all on private ports, sockets and directories), each node
# with its own stageloadd reading memory from a fixture proc root, and
# spank_stageload.so in plugstack.conf with socket=.../%n/sl.sock so each
# node reaches its own daemon (docs/slurm.md). It checks:
#  - srun --stageload-wait-free=50 waits while the node is 10 % free (the
#    step RUNNING in Slurm meanwhile) and runs once it is 60 %, as the
#    job's user (nobody), its end reported by root;
#  - a two-task step where one task's swap breaches its budget: that task
#    is killed, the other runs on, the step fails, srun prints the
#    stageload line, `show` names the Slurm ids;
#  - sbatch carries the options to the batch script's srun (its own step
#    is not a job);
#  - max_wait fails a task that waits too long, and the job is cancelled;
#  - stageload-slurm-health drains a node whose free % stays low, the next
#    job lands on the other node, the node returns when memory does; a node
#    drained by an admin is left alone; a node whose daemon does not answer
#    is left as it is;
#  - with the node's daemon down, a `required` plugin fails the task and an
#    `optional` one lets it run unwatched.
# Root only; not under the sanitizer build (Slurm's binaries load the
# plugin). Under CI=true a skip is a failure.
set -eu

skip() {
	echo "SKIP: $*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}
fail() {
	echo "FAIL: $*" >&2
	for f in "$T"/log/*.log "$T"/health-*.log; do
		[ -f "$f" ] || continue
		echo "--- $f (last 15 lines) ---" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
}
ok() { echo "ok - $*"; }

SL_BIN=${SL_BIN:?}
PLUGIN=$(cd "$SL_BIN/.." && pwd)/lib/spank_stageload.so
[ "${SL_SANITIZE:-OFF}" = ON ] && { echo "SKIP: not under the sanitizers: Slurm's own binaries load the plugin" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (slurmd, munged and tasks of another user)"
for t in munged mungekey slurmctld slurmd srun sbatch scontrol sinfo squeue scancel setpriv; do
	command -v "$t" >/dev/null || skip "$t is missing: scripts/deps.sh --test installs slurmctld slurmd slurm-client munge libslurm-dev"
done
[ -f "$PLUGIN" ] || skip "$PLUGIN not built (configure with libslurm-dev installed, or -DSTAGELOAD_SLURM=ON)"
[ -x "$SL_BIN/stageload-slurm-health" ] || fail "stageload-slurm-health not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/sl-slurm.XXXXXX")
chmod 755 "$T"
PIDS=()
cleanup() {
	local rc=$? p pid
	set +e
	if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
		# shellcheck disable=SC2046 # job ids are words
		scancel --quiet --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null
	fi
	for ((p = ${#PIDS[@]} - 1; p >= 0; p--)); do
		kill -TERM "${PIDS[$p]}" 2>/dev/null
	done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# What they left (slurmstepd, the tasks, slurmscriptd): every process
	# that names this run's directory, and only those.
	grep -lsF -- "$T" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3 |
		while read -r pid; do
			[ "$pid" != $$ ] && kill -KILL "$pid" 2>/dev/null
		done
	if [ -n "${SL_KEEP:-}" ]; then
		echo "kept $T" >&2
	else
		rm -rf "$T"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

poll() { # poll SECONDS CMD...
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 20; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

# meminfo NODE FREE_PCT [SWAP_USED_MIB]: the node's memory picture, 16 GiB
# RAM and 4 GiB swap, written with a rename.
meminfo() {
	local kb=$(($2 * 16777216 / 100)) swapfree=$((4194304 - ${3:-0} * 1024))
	printf 'MemTotal:       16777216 kB\nMemFree:        %s kB\nMemAvailable:   %s kB\nBuffers:               0 kB\nCached:                0 kB\nSwapTotal:       4194304 kB\nSwapFree:       %s kB\n' \
		"$kb" "$kb" "$swapfree" >"$T/$1/proc/.meminfo"
	mv "$T/$1/proc/.meminfo" "$T/$1/proc/meminfo"
}

# sees NODE PCT: the node's daemon has sampled PCT % free (a task started
# before that would be judged on the picture before).
seen_pct() { [ "$(ctl "$1" --json info | jq_ 'round(j["sample"]["free_pct"])')" = "$2" ]; }
sees() { poll 5 seen_pct "$1" "$2" || fail "the daemon of $1 did not see $2 % free"; }

ctl() { # ctl NODE ARGS...
	local n=$1
	shift
	"$SL_BIN/stageloadctl" --socket "$T/$n/sl.sock" "$@"
}
jq_() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# --- the cluster ---
mkdir -p "$T/munge" "$T/munge/key" "$T/etc" "$T/spool/ctld" "$T/log" "$T/work"
chmod 700 "$T/munge/key"
chmod 777 "$T/work"
mungekey -c -k "$T/munge/key/munge.key" >/dev/null 2>&1 || fail "mungekey"
munged -F -f --socket="$T/munge/sock" --key-file="$T/munge/key/munge.key" \
	--log-file="$T/log/munged.log" --pid-file="$T/munge/pid" \
	--seed-file="$T/munge/seed" >>"$T/log/munged.log" 2>&1 &
PIDS+=($!)
poll 10 test -S "$T/munge/sock" || fail "munged did not start"

for n in n1 n2; do
	mkdir -p "$T/$n/proc/pressure" "$T/spool/$n"
	chmod 755 "$T/$n"
	meminfo "$n" 60
	printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' \
		>"$T/$n/proc/pressure/memory"
	STAGELOAD_CONFIG='' "$SL_BIN/stageloadd" --socket "$T/$n/sl.sock" --db "$T/$n/sl.db" \
		--proc-root "$T/$n/proc" --interval 0.1 --grace 1s >>"$T/log/stageloadd-$n.log" 2>&1 &
	PIDS+=($!)
done
for n in n1 n2; do
	poll 10 ctl "$n" info || fail "stageloadd of $n did not answer"
done

base=$((20000 + RANDOM % 20000))
host=$(hostname)
cat >"$T/etc/slurm-health.conf" <<EOC
socket = $T/%n/sl.sock
free_floor = 5
free_hold = 1s
scontrol = $(command -v scontrol)
slurm_conf = $T/etc/slurm.conf
timeout = 5s
EOC
# slurmd runs HealthCheckProgram with no arguments: a wrapper names the
# config, and keeps the program's stderr (its log) per node.
cat >"$T/etc/health.sh" <<EOC
#!/bin/sh
exec "$SL_BIN/stageload-slurm-health" --config "$T/etc/slurm-health.conf" 2>>"$T/health-\$SLURMD_NODENAME.log"
EOC
chmod 755 "$T/etc/health.sh"
echo "required $PLUGIN socket=$T/%n/sl.sock max_wait=8s" >"$T/etc/plugstack.conf"
cat >"$T/etc/slurm.conf" <<EOC
ClusterName=sltest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
StateSaveLocation=$T/spool/ctld
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/spool/ctld.pid
SlurmdPidFile=$T/spool/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
PlugStackConfig=$T/etc/plugstack.conf
HealthCheckProgram=$T/etc/health.sh
HealthCheckInterval=1
ReturnToService=2
MailProg=/bin/true
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=2 State=UNKNOWN
PartitionName=main Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
EOC
export SLURM_CONF=$T/etc/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >>"$T/log/slurmctld.out" 2>&1 &
PIDS+=($!)
for n in n1 n2; do
	slurmd -D -N "$n" -f "$SLURM_CONF" >>"$T/log/slurmd-$n.out" 2>&1 &
	PIDS+=($!)
done
idle2() { [ "$(sinfo -h -o '%T %D' | awk '$1 == "idle" {print $2}')" = 2 ]; }
poll 20 idle2 || fail "the two nodes did not come up idle: $(sinfo 2>&1)"
srun --help 2>&1 | grep -q -- --stageload-wait-free || fail "srun does not offer --stageload-wait-free"
rc=0
srun --stageload-wait-free=lots true >/dev/null 2>"$T/bad.err" || rc=$?
if [ "$rc" = 0 ] || ! grep -q "stageload: bad value 'lots' for --stageload-wait-free" "$T/bad.err"; then
	fail "a bad --stageload-wait-free was not refused by srun: rc $rc, $(cat "$T/bad.err")"
fi
ok "two nodes up on loopback; srun offers the plugin's options and refuses a bad value"
cd "$T/work"

# --- wait-free: waits at 10 % free, runs at 60 %, as nobody ---
meminfo n1 10
sees n1 10
# shellcheck disable=SC2016 # the task's shell expands it
as_nobody srun -w n1 --stageload-wait-free=50 sh -c 'echo ran as $(id -u); echo "env $STAGELOAD_JOB_ID $STAGELOAD_SOCKET $STAGELOAD_JOB_TOKEN"' \
	>"$T/wf.out" 2>"$T/wf.err" &
wf=$!
queued() { [ "$(ctl n1 --json status | jq_ '[x["state"] for x in j["jobs"]]')" = "['queued']" ]; }
poll 10 queued ||
	fail "the task did not queue at 10 % free: $(ctl n1 status) $(cat "$T/wf.err")"
sleep 0.5
kill -0 "$wf" 2>/dev/null || fail "srun ended while its task waited: $(cat "$T/wf.err")"
[ "$(squeue -h -o %T)" = RUNNING ] || fail "Slurm does not show the waiting task RUNNING: $(squeue)"
meminfo n1 60
wait "$wf" || fail "srun failed after memory came back: $(cat "$T/wf.err")"
grep -q "ran as 65534" "$T/wf.out" || fail "the task did not run as nobody: $(cat "$T/wf.out")"
j=$(ctl n1 --json status --all)
# its environment names its job, this node's daemon and the job's token
wid=$(echo "$j" | jq_ 'j["jobs"][0]["id"]')
grep -Eq "^env $wid $T/n1/sl.sock [0-9a-f]{32}\$" "$T/wf.out" ||
	fail "the task's environment does not name job $wid, its daemon and token: $(cat "$T/wf.out")"
[ "$(echo "$j" | jq_ '[(x["user"], x["state"], x["exit_code"], x["name"].startswith("slurm-"), x["wait_free_pct"]) for x in j["jobs"]]')" = "[('nobody', 'exited', 0, True, 50)]" ] ||
	fail "the task's job: $j"
ok "--stageload-wait-free=50 waits at 10 % free (Slurm: RUNNING), runs at 60 % as nobody with STAGELOAD_JOB_ID, _SOCKET and _JOB_TOKEN; root reported exit 0"

# --- a breach kills one task of two; the other runs on ---
# srun's own context asks the daemon of "its host": n1 here.
# shellcheck disable=SC2016 # the task's shell expands it
SLURMD_NODENAME=n1 srun -w n1 -n2 --stageload-swap-budget=100M \
	sh -c 'sleep 4; echo survived $SLURM_PROCID' >"$T/b.out" 2>"$T/b.err" &
b=$!
two() { [ "$(ctl n1 --json status | jq_ 'sum(1 for x in j["jobs"] if x["state"] == "running")')" = 2 ]; }
poll 10 two || fail "the two tasks did not both start: $(ctl n1 status)"
meminfo n1 60 200
rc=0
wait "$b" || rc=$?
meminfo n1 60 0
[ "$rc" != 0 ] || fail "the step did not fail"
grep -Eq "^stageload: task [01] killed: the system's swap grew 200M while it ran, over its 100M budget$" "$T/b.err" ||
	fail "srun did not print the stageload line: $(cat "$T/b.err")"
killed=$(sed -n 's/^stageload: task \([01]\) killed.*/\1/p' "$T/b.err")
grep -q "survived $((1 - killed))" "$T/b.out" || fail "the other task did not run on: $(cat "$T/b.out")"
kj=$(ctl n1 --json status --all | jq_ '[x["id"] for x in j["jobs"] if x["state"] == "killed"][0]')
show=$(ctl n1 --json show "$kj")
[ "$(echo "$show" | jq_ '(j["end_reason"], j["slurm_step_id"], j["slurm_task_id"], j["slurm_job_id"] > 0)')" = "('swap_budget', 0, $killed, True)" ] ||
	fail "show of the killed task: $show"
ctl n1 show "$kj" | grep -Eq "^Slurm: job [0-9]+, step 0, task $killed\.$" ||
	fail "stageloadctl show does not name the Slurm task: $(ctl n1 show "$kj")"
ok "a breach kills task $killed only, the step fails (srun $rc), srun prints the stageload line, show names the Slurm ids"

# --- sbatch passes the options to the script's srun ---
printf '#!/bin/sh\nsrun -n1 sh -c "echo in-batch"\n' >"$T/work/batch.sh"
sbatch -w n2 --wait --stageload-name=batchy -o "$T/work/batch.out" "$T/work/batch.sh" >/dev/null 2>"$T/sb.err" ||
	fail "sbatch: $(cat "$T/sb.err") $(cat "$T/work/batch.out" 2>/dev/null)"
grep -q in-batch "$T/work/batch.out" || fail "batch output: $(cat "$T/work/batch.out")"
[ "$(ctl n2 --json status --all | jq_ '[(x["name"], x["slurm_step_id"], x["state"]) for x in j["jobs"]]')" = "[('batchy', 0, 'exited')]" ] ||
	fail "n2's jobs after sbatch: $(ctl n2 status --all)"
ok "sbatch --stageload-name reaches the batch script's srun; the batch step itself is no job"

# --- max_wait ---
meminfo n2 10
sees n2 10
start=$(date +%s)
rc=0
srun -w n2 --stageload-wait-free=50 true >/dev/null 2>"$T/mw.err" || rc=$?
took=$(($(date +%s) - start))
[ "$rc" != 0 ] || fail "a task past max_wait did not fail"
grep -q "past max_wait: not started" "$T/mw.err" || fail "max_wait message: $(cat "$T/mw.err")"
# 8 s: room for the tasks above to be admitted on a loaded machine
if [ "$took" -lt 7 ] || [ "$took" -gt 14 ]; then fail "max_wait=8s took ${took}s"; fi
ctl n2 --json status --all | jq_ '[x["state"] for x in j["jobs"]][0] == "cancelled"' | grep -q True ||
	fail "the job past max_wait: $(ctl n2 status --all)"
meminfo n2 60
ok "max_wait=8s fails a task still waiting (${took}s), its job cancelled"

# --- node health ---
drained() { # drained NODE REASON_PREFIX
	local line
	line=$(scontrol show node "$1" -o)
	case $line in *State=*DRAIN*) ;; *) return 1 ;; esac
	case $line in *"Reason=$2"*) return 0 ;; esac
	return 1
}
ms() { date +%s%3N; }
meminfo n2 3
t0=$(ms)
poll 15 drained n2 "stageload: free" || fail "n2 was not drained at 3 % free: $(scontrol show node n2 -o)"
# shellcheck disable=SC2016 # the task's shell expands it
got=$(srun -n1 sh -c 'echo $SLURMD_NODENAME' 2>"$T/h.err") || fail "srun with n2 drained: $(cat "$T/h.err")"
[ "$got" = n1 ] || fail "the job ran on $got, not n1"
t_drain=$(($(ms) - t0))
meminfo n2 60
t0=$(ms)
notdrained() { ! scontrol show node "$1" -o | grep -q 'State=[A-Z+]*DRAIN'; }
poll 15 notdrained n2 || fail "n2 did not come back at 60 % free: $(scontrol show node n2 -o)"
t_resume=$(($(ms) - t0))
ok "health: n2 drained ${t_drain} ms after 3 % free ('stageload: ...'), the next job ran on n1, n2 resumed ${t_resume} ms after 60 %"

scontrol update nodename=n1 state=drain reason="admin: new DIMM"
meminfo n1 3
sleep 2.5
drained n1 "admin: new DIMM" || fail "the admin's drain of n1 was changed: $(scontrol show node n1 -o)"
meminfo n1 60
sleep 2.5
drained n1 "admin: new DIMM" || fail "the admin's drain of n1 was lifted: $(scontrol show node n1 -o)"
grep -q "drained by someone else (admin: new DIMM)" "$T/health-n1.log" || fail "health log of n1 does not say why"
scontrol update nodename=n1 state=resume
ok "health: a node drained by an admin is left alone, at low free % and after"

# --- the daemon does not answer: the node is left as it is ---
kill -TERM "${PIDS[2]}"
wait "${PIDS[2]}" 2>/dev/null || true
meminfo n2 3
: >"$T/health-n2.log"
poll 10 grep -q "daemon does not answer: node left as it is" "$T/health-n2.log" ||
	fail "health with n2's daemon down: $(cat "$T/health-n2.log")"
notdrained n2 || fail "n2 was drained with its daemon down"
ok "health: with the node's daemon down the node is left as it is (logged)"

# --- the node's daemon is down: required fails the task, optional runs it ---
rc=0
srun -w n2 --stageload-wait-free=50 true >/dev/null 2>"$T/down.err" || rc=$?
if [ "$rc" = 0 ] || ! grep -q "stageload: task 0: the daemon at $T/n2/sl.sock does not answer" "$T/down.err"; then
	fail "required, daemon down: rc $rc, $(cat "$T/down.err")"
fi
# plugstack.conf is read at each step's start, by srun and slurmstepd.
sed -i 's/^required /optional /' "$T/etc/plugstack.conf"
out=$(srun -w n2 --stageload-wait-free=50 echo ran-unwatched 2>"$T/down.err") ||
	fail "optional, daemon down: $(cat "$T/down.err")"
[ "$out" = ran-unwatched ] || fail "optional, daemon down: output '$out'"
ok "daemon down: a required plugin fails the task, an optional one lets it run unwatched"
