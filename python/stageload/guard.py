"""guard(): the current process as an attached job of the daemon.

    with stageload.guard(wait_free=40, swap_budget="8G"):
        run_pipeline()

Entering registers the process (an attached job), waits for admission
showing the queue line on stderr as `stageloadctl run` does, then asks the
daemon to follow this process and its descendants (job_pid with tree: not
its process group, which may hold the user's shell). A breach raises
SwapBudgetExceeded in the main thread, from a SIGTERM handler, so
`finally:` blocks run within the daemon's grace; leaving the block reports
the exit. docs/python.md is the manual.
"""

from __future__ import annotations

import functools
import math
import os
import signal
import sys
import threading
import time
import warnings
from types import FrameType, TracebackType
from typing import Any, Callable, Dict, Optional, Type, TypeVar, Union

from .units import format_size
from .client import Client, ConnectionLost, DaemonNotRunning, StageloadError, WrongState

F = TypeVar("F", bound=Callable[..., Any])


class JobTerminated(Exception):
    """The daemon (or someone) sent SIGTERM to the guarded process: a
    cancel, or a breach (SwapBudgetExceeded)."""

    def __init__(self, message: str, job_id: Optional[int] = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.paragraph = message


class SwapBudgetExceeded(JobTerminated):
    """Swap grew past the job's budget. paragraph is the daemon's
    explanation ("killed during decode at 05:12:03: the system's swap grew
    8.4G while it ran ...");
    requeued is true when a retry follows (decorator form only)."""

    def __init__(self, paragraph: str, job_id: Optional[int] = None,
                 requeued: bool = False, swap_growth_bytes: Optional[int] = None,
                 swap_budget_bytes: Optional[int] = None) -> None:
        super().__init__(paragraph, job_id)
        self.requeued = requeued
        self.swap_growth_bytes = swap_growth_bytes
        self.swap_budget_bytes = swap_budget_bytes


class JobNotRun(StageloadError):
    """The job ended before it ran: cancelled while queued, or refused."""


def pct_compare(free_pct: float, want_pct: float) -> str:
    """"39.7% < 40%": with the fewest decimals that keep the comparison
    true, never "40% < 40%" (as stageloadctl says it)."""
    want = ("%.2f" % want_pct).rstrip("0").rstrip(".")
    below = free_pct < want_pct
    for d in range(4):
        f = "%.*f" % (d, free_pct)
        if (float(f) < float(want)) == below:
            break
    else:
        f = "%.3f" % ((math.floor if below else math.ceil)(free_pct * 1000) / 1000)
    return "%s%% %s %s%%" % (f, "<" if below else ">=", want)


# What follows "queued: position P of N, " for each waiting_for: the line
# column of proto/names.h's list, which tests/names.py holds this table to.
# "%F" is the free % against the job's, "%f" the free %, "%w" the job's
# free %, "%R" the memory promised to running jobs (unknown here), "%a"
# the job it starts after and "%i" the job's own id ("ID" when unknown).
WAIT_LINES: Dict[str, str] = {
    "none": "free %f, being admitted",
    "free": "free %F",
    "settle": "free %f, waiting for the last job to settle",
    "expect": "free %f, less than %w once %R promised to running jobs counts",
    "exclusive": "free %f, waiting to run alone",
    "max_running": "free %f, too many jobs running",
    "head": "free %f, waiting for the jobs ahead",
    "storage": "free %f, waiting for the daemon's database to work again",
    "client": "free %f, waiting for its stageloadctl to come back",
    "held": "free %f, held: stageloadctl release %i",
    "after": "free %f, waiting for job %a to end",
    "group": "free %f, its group (or its user's share of it) is full",
    "begin": "free %f, waiting to begin at %b",
}


def begin_text(ms: int) -> str:
    """When a job may begin, as a local clock time ("23:10"), with the date
    when it is not today."""
    if ms <= 0:
        return "?"
    t = time.localtime(ms / 1000)
    today = time.localtime()
    fmt = "%H:%M:%S" if t.tm_sec else "%H:%M"
    if (t.tm_year, t.tm_yday) != (today.tm_year, today.tm_yday):
        fmt = "%Y-%m-%d " + fmt
    return time.strftime(fmt, t)


def size_compare(available: int, want: int) -> str:
    """"8.1G < 30G": available memory against a --wait-free SIZE, never
    "30G < 30G" (the available size cut, not rounded, to stay below)."""
    have, w = format_size(available), format_size(want)
    below = available < want
    if below and have == w and w[-1] in "KMGTPE":
        scale = 1024 ** ("KMGTPE".index(w[-1]) + 1)
        v = available / scale
        for d in (1, 2, 3):
            cut = math.floor(v * 10 ** d) / 10 ** d
            if cut < float(w[:-1]):
                break
        have = "%.*f%s" % (d, cut, w[-1])
    return "%s %s %s" % (have, "<" if below else ">=", w)


def _on_text(waiting_on: Any) -> str:
    """"job 12 (ana, qwen)", "jobs 3 (bo, a) and 4 (bo, b)": the jobs of a
    waiting_on list, as stageloadctl names them."""
    jobs = [w for w in (waiting_on or []) if isinstance(w, dict)]
    if not jobs:
        return ""
    one = []
    for w in jobs[:4] if len(jobs) <= 4 else jobs[:3]:
        user = str(w.get("user") or "")[:16]
        name = str(w.get("name") or "")[:24]
        one.append("%s (%s%s)" % (w.get("id"), user, ", " + name if name else ""))
    if len(jobs) > 4:
        text = ", ".join(one) + " and %d more" % (len(jobs) - 3)
    elif len(one) > 1:
        text = ", ".join(one[:-1]) + " and " + one[-1]
    else:
        text = one[0]
    return ("jobs " if len(jobs) > 1 else "job ") + text


def behind_words(kind: str, waiting_on: Any, until_ms: Optional[int]) -> str:
    """What follows the reason when the daemon names the jobs a queued job
    waits behind (PROTOCOL.md, Job: waiting_on, waiting_until_ms), in
    stageloadctl's words: ": job 12 (ana, qwen) still growing, at most 18 s
    more", ": job 13 (ana) until 23:10, then others may pass", ..."""
    on = _on_text(waiting_on)
    if not on:
        return ""
    now = time.time() * 1000
    if kind == "settle":
        if until_ms and until_ms > now:
            left = int((until_ms - now + 999) // 1000)
            more = ("%d s" % left if left < 60 else "%d min %d s" % (left // 60, left % 60)
                    if left < 3600 else "%d h %d min" % (left // 3600, left // 60 % 60))
            return ": %s still growing, at most %s more" % (on, more)
        return ": %s still growing" % on
    if kind == "head":
        if until_ms and until_ms > now:
            return ": %s until %s, then others may pass" % (
                on, time.strftime("%H:%M", time.localtime(until_ms / 1000)))
        if until_ms:
            return ": %s, whose turn has run out: others may pass" % on
        return ": %s" % on
    if kind == "expect":
        return ": promised to %s" % on
    if kind in ("max_running", "group"):
        return ": %s running" % on
    return ": %s" % on


def queue_line(position: int, of: int, free_pct: float, wait_free_pct: float,
               waiting_for: Optional[str], wait_free_bytes: int = 0,
               total_bytes: int = 0, job_id: int = 0, begin_ms: int = 0,
               waiting_on: Any = None, waiting_until_ms: Optional[int] = None) -> str:
    """The line `stageloadctl run` shows while a job waits; with
    wait_free_bytes (a --wait-free SIZE) and the machine's total_bytes, the
    free memory as a size against it; job_id names the release of a held
    job, begin_ms when a job given --begin may start; waiting_on and
    waiting_until_ms (the queue notification's) name the jobs it waits
    behind and until when."""
    s = "queued: position %d of %d, " % (position, of)
    why = waiting_for or "free"
    name, _, after = why.partition(" ")
    if name == "after" and not (after.isdigit() and len(after) < 20):
        name = ""
    tmpl = WAIT_LINES.get(name)
    if tmpl is None:
        # a waiting_for this package does not know (PROTOCOL.md: "other")
        return s + "free %.0f%%, waiting (other: %s)" % (free_pct, why)
    want = ("%.2f" % wait_free_pct).rstrip("0").rstrip(".")
    compare = pct_compare(free_pct, wait_free_pct)
    if wait_free_bytes > 0:
        want = format_size(wait_free_bytes)
        available = int(free_pct / 100 * total_bytes)
        if not total_bytes:
            compare = "below " + want
        elif not (wait_free_pct > 0 and available >= wait_free_bytes):
            compare = size_compare(available, wait_free_bytes)
    else:
        want += "%"
    words = {"F": compare, "f": "%.0f%%" % free_pct,
             "w": want, "R": "memory", "a": after,
             "i": str(job_id) if job_id > 0 else "ID",
             "b": begin_text(begin_ms)}
    out, i = [], 0
    while i < len(tmpl):
        if tmpl[i] == "%" and i + 1 < len(tmpl) and tmpl[i + 1] in words:
            out.append(words[tmpl[i + 1]])
            i += 2
        else:
            out.append(tmpl[i])
            i += 1
    return s + "".join(out) + behind_words(name, waiting_on, waiting_until_ms)


# Not on a terminal, a line whose wait is of the same kind as the last one
# printed (only its numbers moved) waits this long after it.
PROGRESS_QUIET_S = 60.0


class QueueLine:
    """The queue line on stderr: redrawn in place on a terminal; otherwise
    a line when what the job waits for changes (the waiting_for kind, or
    the job it waits behind), else at most one a minute, as stageloadctl
    does."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self.last = ""
        self.open = False
        self.key: Optional[str] = None
        self.at = 0.0

    def show(self, text: str, key: Optional[str] = None) -> None:
        if self.quiet or text == self.last:
            return
        if not self.tty:
            now = time.monotonic()
            if self.last and key == self.key and now - self.at < PROGRESS_QUIET_S:
                return
            self.key, self.at = key, now
        self.last = text
        if self.tty:
            sys.stderr.write("\r\033[K" + text)
            self.open = True
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def end(self) -> None:
        if self.open and self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
        self.open = False
        self.last = ""


def wait_admitted(client: Client, job_id: int, line: QueueLine,
                  wait_free_bytes: int = 0, begin_ms: int = 0) -> int:
    """Read notifications until job_id is admitted; its attempt. JobNotRun
    when it ends first. wait_free_bytes: the job waits for that much
    memory available (the line says it as a size)."""
    total = 0
    if wait_free_bytes:
        total = int((client.info().get("sample") or {}).get("total_bytes") or 0)
    try:
        while True:
            n = client.next_notification()
            if n is None:
                continue
            m, p = n.get("method"), n.get("params") or {}
            if p.get("id") != job_id:
                continue
            if m == "queue":
                line.show(queue_line(p.get("position", 0), p.get("of", 0),
                                     p.get("free_pct", 0.0), p.get("wait_free_pct", 0.0),
                                     p.get("waiting_for"), wait_free_bytes, total,
                                     job_id, begin_ms, p.get("waiting_on"),
                                     p.get("waiting_until_ms")),
                          "%s %s" % (p.get("waiting_for") or "free",
                                     [w.get("id") for w in p.get("waiting_on") or []
                                      if isinstance(w, dict)][:1]))
            elif m == "admitted":
                return int(p.get("attempt", 1))
            elif m == "ended":
                raise JobNotRun(0, "job %d %s before it ran%s" % (
                    job_id, p.get("state", "ended"),
                    ": " + p["end_detail"] if p.get("end_detail") else ""))
    finally:
        line.end()


def stage(name: str, socket: Optional[str] = None) -> bool:
    """Tell the daemon the current job ($STAGELOAD_JOB_ID: set inside a
    guard, a detached job, `stageloadctl run`) entered stage name, and mark
    it in every running MemoryMeter of this process. The report goes to
    the job's own daemon ($STAGELOAD_SOCKET, which a job's environment
    names, unless socket is given) with the job's $STAGELOAD_JOB_TOKEN,
    so a daemon that runs another job of that id refuses it. False
    (after a warning) when the job has ended, the report was refused or
    no daemon answers; True when it was recorded, or there is no job to
    report to."""
    from . import meter as _meter
    _meter._mark_all(name)
    job = os.environ.get("STAGELOAD_JOB_ID")
    if not job:
        return True
    try:
        with Client(socket, timeout=10.0) as c:
            c.stage(int(job), name, token=os.environ.get("STAGELOAD_JOB_TOKEN"))
        return True
    except WrongState as e:
        warnings.warn("stage %r not recorded: %s" % (name, e.message), stacklevel=2)
    except (StageloadError, OSError, ValueError) as e:
        warnings.warn("stage %r not recorded: %s" % (name, e), stacklevel=2)
    return False


_warned_no_daemon = False


class guard:
    """Context manager and decorator; see the module's doc and
    docs/python.md. Sizes take bytes or strings ("8G")."""

    def __init__(self, wait_free: Optional[float] = None,
                 swap_budget: Union[int, str, None] = None,
                 expect: Union[int, str, None] = None, name: Optional[str] = None,
                 retry_on_breach: int = 0, *, priority: Optional[int] = None,
                 exclusive: Optional[bool] = None, required: bool = True,
                 socket: Optional[str] = None, quiet: bool = False) -> None:
        self.wait_free = wait_free
        self.swap_budget = swap_budget
        self.expect = expect
        self.name = name
        self.retry_on_breach = retry_on_breach
        self.priority = priority
        self.exclusive = exclusive
        self.required = required
        self.socket = socket
        self.quiet = quiet
        self.client: Optional[Client] = None
        self.job_id: Optional[int] = None
        self.inside_job = False  # $STAGELOAD_JOB_ID was set: nothing registered
        self.job_token: Optional[str] = None  # the daemon's, for stage reports
        self.attempt = 0
        self._decorated = False
        self._old_handler: Any = None
        self._old_env: Dict[str, Optional[str]] = {}
        self._running = False

    # ---- the decorator ----

    def __call__(self, fn: F) -> F:
        params = dict(wait_free=self.wait_free, swap_budget=self.swap_budget,
                      expect=self.expect, name=self.name,
                      retry_on_breach=self.retry_on_breach, priority=self.priority,
                      exclusive=self.exclusive, required=self.required,
                      socket=self.socket, quiet=self.quiet)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            g = guard(**params)  # one per call: calls may nest or recur
            g._decorated = True
            g._register()
            while True:
                try:
                    g._start()
                    try:
                        result = fn(*args, **kwargs)
                    except BaseException:
                        g._finish(*sys.exc_info())
                        raise
                    g._finish(None, None, None)
                    return result
                except SwapBudgetExceeded as e:
                    if not e.requeued or g.client is None:
                        raise
                    if not g.quiet:
                        sys.stderr.write("stageload: job %d requeued after a breach; "
                                         "waiting to run it again\n" % (g.job_id or 0))
                    g.attempt = wait_admitted(g.client, g.job_id or 0, QueueLine(g.quiet))

        return wrapper  # type: ignore[return-value]

    # ---- the context manager ----

    def __enter__(self) -> "guard":
        if self.retry_on_breach and not self._decorated:
            raise ValueError("retry_on_breach needs the decorator form: a with "
                             "block cannot be run again")
        self._register()
        self._start()
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> bool:
        self._finish(et, ev, tb)
        return False

    def stage(self, name: str) -> bool:
        """Report a stage of this job (see stageload.stage)."""
        return stage(name, self.socket)

    # ---- the steps ----

    def _register(self) -> None:
        """Connect, submit as an attached job and wait for admission."""
        global _warned_no_daemon
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("stageload.guard works in the main thread only: "
                               "the breach arrives as a signal there")
        if os.environ.get("STAGELOAD_JOB_ID"):
            self.inside_job = True
            self.job_id = int(os.environ["STAGELOAD_JOB_ID"])
            return
        try:
            self.client = Client(self.socket)
        except DaemonNotRunning:
            if self.required:
                raise
            if not _warned_no_daemon:
                warnings.warn("stageload: no daemon answers; running unguarded",
                              stacklevel=3)
                _warned_no_daemon = True
            return
        # Only a given name learns its peaks (docs/jobs.md, "Learned
        # peaks"); without one the daemon names the job after the command.
        name = self.name or None
        argv = [sys.executable] + [a for a in sys.argv if a] if sys.argv else [sys.executable]
        try:
            sub = self.client.submit(argv, attached=True, name=name,
                                     wait_free_pct=self.wait_free,
                                     swap_budget=self.swap_budget, expect=self.expect,
                                     priority=self.priority, exclusive=self.exclusive,
                                     retry_on_breach=self.retry_on_breach or None)
            self.job_id = int(sub["id"])
            self.job_token = sub.get("job_token")
            try:
                self.attempt = wait_admitted(self.client, self.job_id, QueueLine(self.quiet))
            except KeyboardInterrupt:
                try:
                    self.client.cancel(self.job_id)
                except (StageloadError, OSError):
                    pass
                raise
        except BaseException:
            self._close()
            raise

    def _start(self) -> None:
        """The block begins: SIGTERM raises, the daemon follows us."""
        if self.client is None:
            return
        self._old_handler = signal.signal(signal.SIGTERM, self._on_term)
        self._running = True
        # The block's environment names its job and daemon as a
        # detached job's does (PROTOCOL.md, submit), for stage reports
        # and for the programs it starts.
        mine = {"STAGELOAD_JOB_ID": str(self.job_id),
                "STAGELOAD_SOCKET": os.path.abspath(self.client.path),
                "STAGELOAD_JOB_TOKEN": self.job_token}
        self._old_env = {k: os.environ.get(k) for k in mine}
        for k, v in mine.items():
            if v:
                os.environ[k] = v
            else:
                os.environ.pop(k, None)
        try:
            self.client.job_pid(self.job_id or 0, os.getpid(), tree=True)
        except BaseException:
            self._restore()
            self._close()
            raise

    def _restore(self) -> None:
        if self._running:
            signal.signal(signal.SIGTERM, self._old_handler
                          if self._old_handler is not None else signal.SIG_DFL)
            self._running = False
            for k, v in self._old_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def _finish(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                tb: Optional[TracebackType]) -> Optional[Dict[str, Any]]:
        """The block ended: report how; answers the job as the daemon has
        it then (queued again after a breach with retries left)."""
        if self.client is None:
            return None
        self._restore()
        if et is None:
            code = 0
        elif et is SystemExit and isinstance(ev, SystemExit):
            c = ev.code
            code = c if isinstance(c, int) and 0 <= c <= 255 else (0 if c is None else 1)
        else:
            code = 1
        job = None
        try:
            try:
                job = self.client.job_exit(self.job_id or 0, exit_code=code)
            except (ConnectionLost, OSError):
                # The daemon restarted during the block: a new connection
                # takes the job back (resume) and reports its end.
                self._close()
                self.client = Client(self.socket)
                self.client.resume(self.job_id or 0)
                job = self.client.job_exit(self.job_id or 0, exit_code=code)
        except (StageloadError, OSError) as e:
            if not self.quiet:
                sys.stderr.write("stageload: job %s: could not report the end: %s\n"
                                 % (self.job_id, e))
        requeued = isinstance(ev, SwapBudgetExceeded) and ev.requeued and \
            job is not None and job.get("state") == "queued"
        if not requeued:
            self._close()
        return job

    def _close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def _breach_note(self, timeout: float) -> Optional[Dict[str, Any]]:
        """The breach notification for our job, if it comes within timeout
        (the daemon signals first, then tells)."""
        c = self.client
        if c is None:
            return None
        deadline = time.monotonic() + timeout
        keep = []
        found = None
        try:
            while found is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                n = c.next_notification(left)
                if n is None:
                    break
                p = n.get("params") or {}
                if n.get("method") == "breach" and p.get("id") == self.job_id:
                    found = p
                elif n.get("method") == "ended" and p.get("id") == self.job_id:
                    keep.append(n)
                    break
                else:
                    keep.append(n)
        except (StageloadError, OSError):
            pass
        if c._sock is not None:
            c._notes.extendleft(reversed(keep))
        return found

    def _breach_asked(self) -> Optional[Dict[str, Any]]:
        """No breach notification came (our connection is gone, e.g. the
        daemon restarted): ask on a new connection whether the job is being
        killed for its budget. The paragraph is then made of its numbers."""
        try:
            with Client(self.socket, timeout=2.0) as c:
                job = c.show(self.job_id or 0)
        except (StageloadError, OSError):
            return None
        growth = int(job.get("swap_growth_bytes") or 0)
        budget = int(job.get("swap_budget_bytes") or 0)
        # end_reason is shown once the job has ended; until then its
        # growth past its budget is what a breach is
        if job.get("end_reason") != "swap_budget" and not (budget and growth > budget):
            return None
        return {"swap_growth_bytes": growth, "swap_budget_bytes": budget,
                "detail": "killed: the system's swap grew %s while it ran, over its %s budget"
                          % (format_size(growth), format_size(budget))}

    def _on_term(self, signum: int, frame: Optional[FrameType]) -> None:
        b = self._breach_note(1.0)
        if b is None:
            b = self._breach_asked()
        if b is not None:
            para = b.get("detail") or ("the system's swap grew %s bytes while it ran, "
                                       "past its budget of %s bytes"
                                       % (b.get("swap_growth_bytes"),
                                          b.get("swap_budget_bytes")))
            raise SwapBudgetExceeded(para, self.job_id, bool(b.get("requeued")),
                                     b.get("swap_growth_bytes"), b.get("swap_budget_bytes"))
        raise JobTerminated("job %s: terminated (SIGTERM): cancelled, or signalled "
                            "from outside" % self.job_id, self.job_id)
