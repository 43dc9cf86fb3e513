"""The `stageload` console script.

    stageload guard --wait-free 40 --swap-budget 8G -- python generate.py
    stageload meter --out trace.jsonl [--interval 0.5] -- CMD [ARGS...]
    stageload stage NAME

`guard` (alias `run`) means what `stageloadctl guard` means and exits with
the same codes (docs/cli.md, "Exit codes"): the command's own status, 128+N
when a signal ended it, 124 when it was killed for its swap budget or its
time limit, 125 when
it never ran (cancelled or refused), 126/127 when it could not be started,
69 when no daemon answers, 77 when the daemon said permission denied.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from . import __version__
from .client import E_PERM, Client, ConnectionLost, DaemonNotRunning, StageloadError
from .guard import JobNotRun, QueueLine, wait_admitted
from .job_fields import CLI_OPTIONS
from .units import format_size, parse_begin_ms, parse_limit_ms, parse_size

EXIT_OK = 0
EXIT_ERR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 69
EXIT_NOPERM = 77
EXIT_JOB_LOST = 123
EXIT_JOB_BUDGET = 124
EXIT_JOB_NOTRUN = 125
EXIT_JOB_CANNOTRUN = 126
EXIT_JOB_NOTFOUND = 127

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _err(msg: str) -> None:
    sys.stderr.write("stageload: %s\n" % msg)
    sys.stderr.flush()


class _Interrupted(Exception):
    def __init__(self, sig: int) -> None:
        super().__init__(sig)
        self.sig = sig


# A size option given as a bare number below this (other than 0) is
# refused with a suggestion, as stageloadctl does (docs/units.md).
SIZE_BARE_MIN = 1 << 20


def _size_arg(v: str) -> int:
    try:
        n = parse_size(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    if 0 < n < SIZE_BARE_MIN and v.isdigit():
        raise argparse.ArgumentTypeError(
            "%s is %s bytes: did you mean %s%s? (write %sB for bytes)"
            % (v, v, v, "G" if n < 1024 else "M", v))
    return n


def _free_arg(v: str) -> "tuple[Optional[float], Optional[int]]":
    """--wait-free as stageloadctl reads it: a plain number is a
    percentage (40, 40%, 37.5); a size has its unit (30G: that much
    available). (pct, None) or (None, bytes)."""
    try:
        f = float(v[:-1] if v.endswith("%") else v)
    except ValueError:
        f = None
    if f is not None and v.strip() == v and "e" not in v.lower():
        if not 0 <= f <= 100:
            raise argparse.ArgumentTypeError(
                "%s: a percentage is 0 to 100 (40, 40%%, 37.5), a size has a unit (30G)" % v)
        return f, None
    if any(u in v for u in "KMGTkmgt"):
        try:
            return None, parse_size(v)
        except ValueError:
            pass
    raise argparse.ArgumentTypeError(
        "%r is neither a percentage from 0 to 100 (40, 40%%, 37.5) nor a size (30G)" % v)


def _limit_arg(v: str) -> int:
    try:
        return parse_limit_ms(v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def _begin_arg(v: str) -> int:
    try:
        return parse_begin_ms(v, int(time.time() * 1000))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


_TIME_VALUES = {"limit": _limit_arg, "begin": _begin_arg}
# guard's time options (--time, --time-per-attempt, --begin): those of
# stageloadctl run's rows read as a limit or a begin.
_TIME_OPTIONS = {opt: o for opt, o in CLI_OPTIONS.items()
                 if o.run and o.value in _TIME_VALUES}


def _time_params(args: argparse.Namespace) -> Dict[str, int]:
    """The parameters of the time options given."""
    out = {}
    for opt, o in _TIME_OPTIONS.items():
        v = getattr(args, "time_" + opt.replace("-", "_"), None)
        if v is not None:
            out[o.param] = v
    return out


# The wire names of job options a daemon's refusal may use, and the
# console's options that set them (stageloadctl maps them the same way).
_WIRE_WORDS = (("wait_free_bytes", "--wait-free", True),
               ("swap_budget_bytes", "--swap-budget", True),
               ("expect_bytes", "--expect", True),
               ("wait_free_pct", "--wait-free", False),
               ("retry_on_breach", "--retry-on-breach", False))


def daemon_words(msg: str) -> str:
    """A daemon's message in the console's words: option names for wire
    names, sizes for byte counts ("wait_free_bytes 42949672960 ...
    (25276502016 bytes, 24G)" reads "--wait-free 40G ... (24G)")."""
    for wire, opt, sized in _WIRE_WORDS:
        if sized:
            msg = re.sub(r"(?<![\w])%s (\d+)(?![\w])" % wire,
                         lambda m, o=opt: "%s %s" % (o, format_size(int(m.group(1)))), msg)
        msg = re.sub(r"(?<![\w])%s(?![\w])" % wire, opt, msg)
    return re.sub(r"\((\d+) bytes, ", "(", msg)


def _split_command(argv: Sequence[str]) -> "tuple[List[str], List[str]]":
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def _start(argv: List[str], job_id: int, env: Dict[str, str]) -> "tuple[int, int]":
    """Fork the command in a process group of its own, held at a gate
    until the daemon knows its pid (PROTOCOL.md, job_pid); (pid, gate fd)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: exec or _exit, nothing else
        try:
            os.close(w)
            os.setpgid(0, 0)
            for s in FORWARDED + (signal.SIGCHLD, signal.SIGPIPE, signal.SIGTTOU):
                signal.signal(s, signal.SIG_DFL)
            go = os.read(r, 1)
            if go != b"g":
                os._exit(EXIT_JOB_NOTRUN)
            os.close(r)
            os.environ["STAGELOAD_JOB_ID"] = str(job_id)
            os.environ.update(env)
            try:
                os.execvp(argv[0], argv)
            except OSError as e:
                sys.stderr.write("stageload: cannot run %s: %s\n" % (argv[0], e.strerror))
                sys.stderr.flush()
                os._exit(EXIT_JOB_NOTFOUND if isinstance(e, FileNotFoundError)
                         else EXIT_JOB_CANNOTRUN)
        finally:
            os._exit(EXIT_JOB_CANNOTRUN)
    os.close(r)
    try:
        os.setpgid(pid, pid)  # both sides: set before job_pid whichever runs first
    except OSError:
        pass
    return pid, w


def _exec_check(path: str) -> int:
    """0 when path is a regular file this process may execute, else
    EXIT_JOB_NOTFOUND (nothing there, or not a file) or EXIT_JOB_CANNOTRUN."""
    if not os.path.isfile(path):
        return EXIT_JOB_NOTFOUND
    return 0 if os.access(path, os.X_OK) else EXIT_JOB_CANNOTRUN


def which(cmd: str, path_env: Optional[str] = None) -> int:
    """Find cmd as execvp will in the job (a name with a slash as it is,
    else along PATH, an empty element meaning the current directory):
    0 when found, EXIT_JOB_CANNOTRUN when only files that may not be
    executed were found, else EXIT_JOB_NOTFOUND."""
    if not cmd:
        return EXIT_JOB_NOTFOUND
    if "/" in cmd:
        return _exec_check(cmd)
    if path_env is None:
        path_env = os.environ.get("PATH", os.defpath)
    best = EXIT_JOB_NOTFOUND
    for d in path_env.split(":"):
        rc = _exec_check(os.path.join(d or ".", cmd))
        if rc == 0:
            return 0
        if rc == EXIT_JOB_CANNOTRUN:
            best = rc
    return best


def _foreground_tty() -> bool:
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


def _give_tty(pgrp: int) -> None:
    # SIGTTOU would stop us for changing the terminal's group from the
    # background (which we are once the command's group has it).
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(0, pgrp)
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, old)


def _status_of(wstatus: int) -> "tuple[int, Optional[int], Optional[int]]":
    """(shell status, exit code, signal)."""
    if os.WIFSIGNALED(wstatus):
        sig = os.WTERMSIG(wstatus)
        return 128 + sig, None, sig
    code = os.WEXITSTATUS(wstatus)
    return code, code, None


def cmd_guard(args: argparse.Namespace, command: List[str]) -> int:
    if not command:
        _err("guard: no command given (stageload guard [options] -- CMD [ARGS...])")
        return EXIT_USAGE
    # A mistyped command fails now, not after its whole turn in the queue
    # with a job left behind (stageloadctl run does the same).
    rc = which(command[0])
    if rc != 0:
        _err("cannot run %s: %s (no job was queued)" % (
            command[0], "command not found" if rc == EXIT_JOB_NOTFOUND
            else "permission denied"))
        return rc
    try:
        c = Client(args.socket)
    except DaemonNotRunning as e:
        _err(e.message)
        return EXIT_UNAVAILABLE
    except (StageloadError, OSError) as e:
        _err(str(e))
        return EXIT_UNAVAILABLE
    line = QueueLine(args.quiet)
    wait_free = args.wait_free or (None, None)
    interrupted: List[int] = []

    def on_wait_signal(sig: int, frame: Any) -> None:
        raise _Interrupted(sig)

    # What can be checked here is a usage error in the console's words
    # (exit 2), as stageloadctl does: a size that could never be free.
    if wait_free[1]:
        try:
            total = int((c.info().get("sample") or {}).get("total_bytes") or 0)
        except (StageloadError, OSError):
            total = 0
        if total and wait_free[1] > total:
            _err("guard: --wait-free %s is above the machine's total memory (%s): it "
                 "could never be free" % (format_size(wait_free[1]), format_size(total)))
            c.close()
            return EXIT_USAGE
    times = _time_params(args)
    begin_ms = next((times[o.param] for o in _TIME_OPTIONS.values()
                     if o.value == "begin" and o.param in times), 0)
    old = {s: signal.signal(s, on_wait_signal) for s in FORWARDED}
    try:
        try:
            sub = c.submit(command, attached=True, name=args.name,
                           wait_free_pct=wait_free[0], wait_free_bytes=wait_free[1],
                           swap_budget=args.swap_budget,
                           expect=args.expect, priority=args.priority,
                           exclusive=args.exclusive or None,
                           retry_on_breach=args.retry_on_breach,
                           **times)
        except StageloadError as e:
            _err(daemon_words(e.message))
            if isinstance(e, ConnectionLost):
                return EXIT_UNAVAILABLE
            return EXIT_NOPERM if e.code == E_PERM else EXIT_JOB_NOTRUN
        job_id = int(sub["id"])
        while True:
            for s in FORWARDED:
                signal.signal(s, on_wait_signal)
            try:
                wait_admitted(c, job_id, line, wait_free[1] or 0, begin_ms)
            except _Interrupted as i:
                try:
                    c.cancel(job_id)
                except (StageloadError, OSError):
                    pass
                return 128 + i.sig
            except JobNotRun as e:
                _err(e.message)
                return EXIT_JOB_NOTRUN
            rc = _run_once(c, job_id, command, interrupted, sub.get("job_token"))
            if rc is not None:
                return rc
            if not args.quiet:
                _err("job %d requeued; waiting to run it again" % job_id)
    except ConnectionLost as e:
        _err(e.message)
        return EXIT_UNAVAILABLE
    except _Interrupted as i:  # before the job was registered
        return 128 + i.sig
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        c.close()


def _run_once(c: Client, job_id: int, command: List[str],
              interrupted: List[int], token: Optional[str] = None) -> Optional[int]:
    """Run the command once; its exit status, or None when the daemon put
    the job back in the queue (a breach with retries left)."""
    # As a detached job's: its daemon and token (PROTOCOL.md, submit).
    env = {"STAGELOAD_SOCKET": os.path.abspath(c.path)}
    if token:
        env["STAGELOAD_JOB_TOKEN"] = token
    pid, gate = _start(command, job_id, env)

    def forward(sig: int, frame: Any) -> None:
        try:
            os.killpg(pid, sig)
        except OSError:
            pass

    for s in FORWARDED:
        signal.signal(s, forward)
    # In the foreground of a terminal, the command's group gets it (Ctrl-C
    # and reading input work as in a shell), and we take it back after.
    tty = _foreground_tty()
    if tty:
        _give_tty(pid)
    try:
        c.job_pid(job_id, pid)
        os.write(gate, b"g")
    except StageloadError as e:
        _err("job %d: %s" % (job_id, e.message))
        os.close(gate)
        os.waitpid(pid, 0)
        if tty:
            _give_tty(os.getpgrp())
        return EXIT_JOB_CANNOTRUN
    os.close(gate)
    while True:
        _, wstatus = os.waitpid(pid, os.WUNTRACED if tty else 0)
        if not os.WIFSTOPPED(wstatus):
            break
        # Ctrl-Z stopped the command: stop with it, as one shell job;
        # once continued (fg), the terminal and the command go on.
        _give_tty(os.getpgrp())
        os.kill(os.getpid(), signal.SIGSTOP)
        _give_tty(pid)
        try:
            os.killpg(pid, signal.SIGCONT)
        except OSError:
            pass
    if tty:
        _give_tty(os.getpgrp())
    status, code, sig = _status_of(wstatus)
    try:
        job = c.job_exit(job_id, exit_code=code, signal=sig)
    except StageloadError as e:
        _err("job %d: could not report the end to the daemon: %s" % (job_id, e.message))
        return status
    # Answers come in order: a breach sent before the answer is here now.
    breach: Optional[Dict[str, Any]] = None
    for n in list(c._notes):
        p = n.get("params") or {}
        if n.get("method") == "breach" and p.get("id") == job_id:
            breach = p
            c._notes.remove(n)
    # Requeued, by this report or by the daemon before it (it does not wait
    # for the report once the process is gone): the queue and admitted
    # notifications of the next attempt may be here already, and are kept
    # for wait_admitted.
    if job.get("state") in ("queued", "admitted"):
        return None
    if job.get("state") == "killed" and job.get("end_reason") == "swap_budget":
        growth = (breach or {}).get("swap_growth_bytes", job.get("swap_growth_peak_bytes", 0))
        budget = job.get("swap_budget_bytes", 0)
        _err("job %d killed: the system's swap grew by %s while it ran, past its budget of %s"
             % (job_id, format_size(int(growth or 0)), format_size(int(budget or 0))))
        return EXIT_JOB_BUDGET
    if job.get("state") == "killed" and job.get("end_reason") == "time_limit":
        # As timeout(1) exits; the daemon's words say which limit.
        _err("job %d %s" % (job_id, job.get("end_detail")
                            or "killed: it ran past its time limit"))
        return EXIT_JOB_BUDGET
    return status


def cmd_meter(args: argparse.Namespace, command: List[str]) -> int:
    from .meter import MemoryMeter
    if not command:
        _err("meter: no command given (stageload meter --out FILE -- CMD [ARGS...])")
        return EXIT_USAGE
    import subprocess
    try:
        child = subprocess.Popen(command)
    except FileNotFoundError:
        _err("cannot run %s: not found" % command[0])
        return EXIT_JOB_NOTFOUND
    except OSError as e:
        _err("cannot run %s: %s" % (command[0], e.strerror))
        return EXIT_JOB_CANNOTRUN

    def forward(sig: int, frame: Any) -> None:
        child.send_signal(sig)

    old = {s: signal.signal(s, forward) for s in FORWARDED}
    m = MemoryMeter(args.out, interval=args.interval, pid=child.pid, socket=args.socket,
                    source=args.source)
    try:
        m.start()
        rc = child.wait()
    finally:
        m.stop()
        for s, h in old.items():
            signal.signal(s, h)
    return 128 - rc if rc < 0 else rc


def cmd_stage(args: argparse.Namespace, rest: List[str]) -> int:
    from .guard import stage
    if not os.environ.get("STAGELOAD_JOB_ID"):
        _err("stage: not inside a job (STAGELOAD_JOB_ID is not set)")
        return EXIT_USAGE
    import warnings
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        stage(args.name, args.socket)
    for x in w:
        _err("warning: %s" % x.message)
    return EXIT_OK


_GUARD_EXAMPLES = """examples:
  stageload guard --wait-free 40 --swap-budget 8G -- python generate.py
  stageload guard --wait-free 30G --expect 20G --name qwen -- python serve.py
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stageload", description=(
        "stageload from Python: run a command as a guarded job, or meter it."))
    p.add_argument("--version", action="version", version="stageload " + __version__)
    p.add_argument("--socket", help="the daemon's socket (default: $STAGELOAD_SOCKET, "
                   "then /var/run/stageload.sock, then the per-user one)")
    sub = p.add_subparsers(dest="command")
    g = sub.add_parser("guard", aliases=["run"], help="wait for admission, run CMD, exit "
                       "with its status (as stageloadctl guard)",
                       usage="stageload guard [options] -- CMD [ARGS...]",
                       epilog=_GUARD_EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("--wait-free", type=_free_arg, metavar="PCT|SIZE",
                   help="start only when free memory is >= PCT%%, or (a size, 30G) when "
                   "that much is available")
    g.add_argument("--swap-budget", type=_size_arg, metavar="SIZE",
                   help="kill it when the system's swap grows by more than SIZE while it runs "
                   "(0: none; default: "
                   "the daemon's)")
    g.add_argument("--expect", type=_size_arg, metavar="SIZE",
                   help="memory it will use: held back from others until reached")
    g.add_argument("--priority", type=int, metavar="N",
                   help="-1000..1000, higher runs first (default 0; above 0: root and "
                   "the daemon's admin_group only)")
    g.add_argument("--name", help="a label (default: the command's name)")
    g.add_argument("--exclusive", action="store_true",
                   help="run only when no other job runs")
    g.add_argument("--retry-on-breach", type=int, metavar="N",
                   help="requeue up to N times after a breach")
    # The time options, as stageloadctl's rows declare them
    # (proto/job-fields.h, JOB_CLI): each sets its parameter.
    for opt, o in _TIME_OPTIONS.items():
        g.add_argument("--" + opt, type=_TIME_VALUES[o.value], metavar=o.metavar,
                       dest="time_" + opt.replace("-", "_"),
                       help=o.help.replace("\n", " ").replace("%", "%%"))
    g.add_argument("-q", "--quiet", action="store_true", help="no queue status on stderr")
    m = sub.add_parser("meter", help="run CMD and write a JSONL trace of its memory",
                       usage="stageload meter --out FILE [options] -- CMD [ARGS...]")
    m.add_argument("--out", required=True, metavar="FILE", help="the trace to write (JSONL)")
    m.add_argument("--interval", type=float, default=0.5, metavar="S",
                   help="seconds between samples (default 0.5)")
    m.add_argument("--source", choices=("auto", "daemon", "local"), default="auto",
                   help="where samples come from: the daemon, this process's own "
                   "reading of the system (local), or auto (default): the daemon when "
                   "it answers and the interval allows")
    s = sub.add_parser("stage", help="inside a job: say it entered stage NAME")
    s.add_argument("name", help="the stage's name (load, warmup, generate, ...)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    opts, command = _split_command(sys.argv[1:] if argv is None else argv)
    p = parser()
    try:
        args, extra = p.parse_known_args(opts)
        if extra:
            # The usual slip: the command's words taken for options
            # because the `--` before them is missing.
            hint = ""
            if args.command in ("guard", "run", "meter") and not extra[0].startswith("-"):
                hint = " (the command goes after --: stageload %s [options] -- %s)" % (
                    args.command, " ".join(extra))
            p.error("unrecognized arguments: %s%s" % (" ".join(extra), hint))
    except SystemExit as e:
        return EXIT_USAGE if e.code else EXIT_OK
    if args.command in ("guard", "run"):
        return cmd_guard(args, command)
    if args.command == "meter":
        return cmd_meter(args, command)
    if args.command == "stage":
        return cmd_stage(args, command)
    p.print_usage(sys.stderr)
    return EXIT_USAGE
