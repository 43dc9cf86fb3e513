"""proto/PROTOCOL.md against the real daemon.

The document is read, not copied: the methods are its "### name" sections,
the documented parameters and result members are the names it quotes in
each section, the Sample and Job members are its JSON examples, the Event
members and the notifications' params are its lists, and the error codes
are its table. Every method is then called on a private stageloadd, and:

- the method list of hello equals the sections and the "who may call"
  table;
- every documented parameter is known to the daemon (never "is not a known
  parameter"), and an unknown one is refused with -32602 naming it;
- every documented result member is in the real result, and the Job,
  Sample and Event objects carry exactly the documented members;
- every documented notification arrives with its documented params;
- the documented error codes come back where the document says they do.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, RpcError, client_as, poll, write_meminfo  # noqa: E402

SRC = os.environ.get("SL_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DOC = os.path.join(SRC, "proto", "PROTOCOL.md")
UNKNOWN = "no_such_param"
GIB_KB = 1 << 20

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)


# ---- reading the document ----

def sections(text, level):
    """{title: body} of the headings of one level."""
    out = {}
    marker = "#" * level + " "
    cur = None
    for line in text.splitlines():
        if line.startswith("#") and not line.startswith(marker + "#"):
            if line.startswith(marker):
                cur = line[len(marker):].strip()
                out[cur] = []
                continue
            if len(line) - len(line.lstrip("#")) <= level:
                cur = None
        if cur is not None:
            out[cur].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def balanced(text, start):
    """The balanced {...} starting at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise AssertionError("unbalanced braces in PROTOCOL.md near: " + text[start:start + 60])


def top_keys(obj_text):
    """The member names at depth 1 of a JSON-like '{...}' of the document:
    '{"a": 1, "b", "c": {"d"}}' -> {a, b, c}. A quoted name is a key when it
    follows '{' or ','."""
    keys = set()
    depth = 0
    prev = ""
    i = 0
    while i < len(obj_text):
        ch = obj_text[i]
        if ch in "{[":
            depth += 1
            prev = ch
        elif ch in "}]":
            depth -= 1
            prev = ch
        elif ch == '"':
            j = obj_text.index('"', i + 1)
            if depth == 1 and prev in ("{", ","):
                keys.add(obj_text[i + 1:j])
            prev = '"'
            i = j
        elif not ch.isspace():
            prev = ch
        i += 1
    return keys


def param_names(body):
    """Names quoted in the method's params paragraph."""
    m = re.search(r"^params:(.*?)(?:\n\n|$)", body, re.S | re.M)
    if not m or m.group(1).strip().startswith("none"):
        return set()
    text = m.group(1)
    names = set(re.findall(r"`([a-z_]+)`", text))
    names |= set(re.findall(r'"([a-z_]+)"\s*[:,}]', text))
    return names


def result_of(body, start=0):
    """('job', None) when the result is a Job; ('obj', keys) for an object.
    The result is the first "result:" paragraph from start."""
    i = body.find("result:", start)
    assert i >= 0, "no 'result:' in: %s" % body[:80]
    after = body[i + len("result:"):].lstrip()
    if re.match(r"(the( final)? )?Job\b", after):
        return ("job", None)
    if after.startswith("`{"):
        return ("obj", top_keys(balanced(after, 1)))
    raise AssertionError("cannot read the result in: %s" % after[:80])


def json_block(body):
    m = re.search(r"```json\n(.*?)```", body, re.S)
    return json.loads(m.group(1))


def read_doc():
    text = open(DOC, encoding="utf-8").read()
    h2 = sections(text, 2)
    doc = {"methods": sections(h2["Methods"], 3)}
    objects = sections(h2["Objects"], 3)
    doc["sample"] = set(json_block(objects["Sample"]))
    doc["job"] = set(json_block(objects["Job"]))
    m = re.search(r"Event:\s*`?(\{.*?\})", doc["methods"]["events"], re.S)
    doc["event"] = top_keys(m.group(1))
    who = set()
    for line in h2["Who may call what"].splitlines():
        m = re.match(r"\|\s*`([a-z_]+)`", line)
        if m:
            who.add(m.group(1))
    doc["who"] = who
    errors = {}
    for line in h2["Errors"].splitlines():
        m = re.match(r"\|\s*(-\d+)\s*\|\s*([^|]+?)\s*\|", line)
        if m:
            errors[m.group(2)] = int(m.group(1))
    doc["errors"] = errors
    notes = {}
    for line in h2["Notifications"].splitlines():
        m = re.match(r"\|\s*`([a-z_]+)`\s*\|([^|]*)\|", line)
        if m:
            cell = m.group(2)
            notes[m.group(1)] = top_keys(cell[cell.index("{"):]) if "{" in cell else None
    doc["notes"] = notes
    return doc


# ---- talking to the daemon ----

def rpc_error(c, method, params):
    try:
        c.call(method, params)
    except RpcError as e:
        return e
    return None


def expect_error(c, method, params, code, what):
    e = rpc_error(c, method, params)
    check(e is not None and e.code == code,
          "%s: expected %d, got %s" % (what, code, "a result" if e is None else
                                       "%d %s" % (e.code, e.message)))
    return e


def check_result(doc, method, got, key=None):
    kind, keys = result_of(doc["methods"][method]) if key is None else key
    if kind == "job":
        check_job(doc, method, got)
        return
    missing = keys - set(got)
    check(not missing, "%s: documented result members missing: %s (got %s)"
          % (method, sorted(missing), sorted(got)))


def check_job(doc, what, job, owner=True, with_env=False):
    want = set(doc["job"])
    if not owner:
        want -= {"argv", "cwd", "env", "end_detail"}
    got = set(job) - {"env"} if not with_env else set(job)
    # waiting_for is present only while queued.
    extra = got - want - ({"waiting_for"} if job.get("state") == "queued" else set())
    if with_env:
        extra -= {"env"}
    check(not (want - got), "%s: Job members missing: %s" % (what, sorted(want - got)))
    check(not extra, "%s: Job members not documented: %s" % (what, sorted(extra)))


def check_note(doc, note, what):
    check("id" not in note and note.get("jsonrpc") == "2.0",
          "%s: a notification carries jsonrpc and no id: %r" % (what, note))
    keys = doc["notes"].get(note["method"])
    check(note["method"] in doc["notes"], "%s: notification %s not documented"
          % (what, note["method"]))
    if keys:
        got = set(note["params"])
        check(keys == got, "notification %s: documented %s, sent %s"
              % (note["method"], sorted(keys), sorted(got)))


def raw_line(c, timeout=10.0):
    """The next line from the daemon as bytes (newline dropped), or None
    at EOF."""
    c.sock.settimeout(timeout)
    while b"\n" not in c.buf:
        try:
            chunk = c.sock.recv(65536)
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            return None
        c.buf += chunk
    line, c.buf = c.buf.split(b"\n", 1)
    return line


def check_ids_echoed(d, errs):
    """The id comes back byte for byte as the request spelt it, on results
    and errors alike; an id JSON does not allow is -32600 with id null."""
    c = Client(d.socket)
    long_id = b'"' + b"id-\\/" * 2000 + b'\\u00e9\\"' + b'"'
    for tok in (b"-1.0", b"1e2", b"0.5", b"1E+2", b"-0", b"9007199254740993",
                b'"a\\/b"', long_id):
        for method, kind in ((b"info", b"result"), (b"nope", b"error")):
            c.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"%s"}\n' % (tok, method))
            line = raw_line(c)
            want = b'{"jsonrpc":"2.0","id":' + tok + b',"' + kind + b'":'
            check(line is not None and line.startswith(want),
                  "id %r echoed byte for byte in a %s: got %r"
                  % (tok[:40], kind.decode(), line and line[:80]))
    for tok in (b"01", b"-01", b"1.", b"1.e5", b'"a\tb"', b"true", b"[1]"):
        c.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"info"}\n' % tok)
        m = json.loads(raw_line(c))
        check(m.get("id", 0) is None and m.get("error", {}).get("code")
              == errs["invalid request"],
              "id %r: -32600 with id null, got %r" % (tok, m))
    check(c.call("info")["version"] == 1, "usable after odd ids")
    c.close()


def check_notifications(d, errs):
    """A valid request without an id is never answered; any other invalid
    message gets -32600 (-32700 when not JSON) with id null, and the
    connection stays usable."""
    c = Client(d.socket)
    quiet = [b'{"jsonrpc":"2.0","method":"info"}',
             b'{"jsonrpc":"2.0","method":"nope","params":{"x":1}}']
    loud = [(b"{}", errs["invalid request"]),
            (b'{"jsonrpc":"2.0","method":"info","extra":1}', errs["invalid request"]),
            (b'{"jsonrpc":"2.0","method":"info","params":[1]}', errs["invalid request"]),
            (b'{"jsonrpc":"2.0","method":""}', errs["invalid request"]),
            (b'{"method":"info"}', errs["invalid request"]),
            (b'{"jsonrpc":"2.0","method":"info","method":"info"}', errs["invalid request"]),
            (b'{"jsonrpc":"2.0","method":"info"', errs["parse error"])]
    for line in quiet:
        c.send_raw(line + b"\n")
    for line, code in loud:
        c.send_raw(line + b"\n")
        try:
            m = json.loads(raw_line(c, timeout=5))
        except TimeoutError:
            m = "no answer"
        check(isinstance(m, dict) and "id" in m and m["id"] is None and
              m.get("error", {}).get("code") == code,
              "%r: %d with id null, got %r" % (line, code, m))
        if not isinstance(m, dict):
            c.close()
            return
    # The quiet ones got nothing: the next answer is this request's.
    c.send_raw(b'{"jsonrpc":"2.0","id":"after","method":"info"}\n')
    m = json.loads(raw_line(c))
    check(m.get("id") == "after" and "result" in m,
          "notifications are not answered: got %r" % (m,))
    c.close()


def check_framing(d, errs):
    """Each framing violation gets its documented code with id null, then
    the connection is closed; a line that is not JSON is not a framing
    violation: -32700, and the connection stays."""
    cases = [(b"x" * (4 * 1024 * 1024 + 1), errs["invalid request"], "line too long"),
             (b'{"jsonrpc":"2.0","id":1,"method":"info","x":"\xc0\xaf"}\n',
              errs["parse error"], "invalid UTF-8")]
    for data, code, what in cases:
        c = Client(d.socket)
        try:
            c.send_raw(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        line = raw_line(c)
        m = json.loads(line) if line else {}
        check(m.get("id", 0) is None and m.get("error", {}).get("code") == code,
              "%s: %d with id null, got %r" % (what, code, m))
        check(raw_line(c) is None, "%s: the connection is closed after the error" % what)
        c.close()
    c = Client(d.socket)
    c.send_raw(b"not json\n")
    m = json.loads(raw_line(c))
    check(m.get("id", 0) is None and m.get("error", {}).get("code") == errs["parse error"],
          "not JSON: -32700 with id null, got %r" % (m,))
    check(c.call("info")["version"] == 1, "not JSON: the connection stays")
    c.close()


def check_history_range(c, errs):
    """The 100000-bucket limit counts the buckets of the range, empty or
    not: floor(until/step) - floor(since/step) + 1."""
    for since, until, step, n in ((0, 99999, 1, 100000), (2, 200001, 2, 100000),
                                  (1, 200000, 2, 100001), (0, 100000, 1, 100001)):
        e = rpc_error(c, "history", {"since_ms": since, "until_ms": until, "step_ms": step})
        if n <= 100000:
            check(e is None, "history of %d buckets (%d..%d step %d) is answered: %s"
                  % (n, since, until, step, e))
        else:
            check(e is not None and e.code == errs["limit reached"]
                  and str(n) in e.message,
                  "history of %d buckets (%d..%d step %d): -32004 naming %d, got %s"
                  % (n, since, until, step, n, e))


def check_logs_offset(d, c, jid, size, errs):
    """Past the end of an ended job's log: -32602 naming its size; at the
    end: answered. A live job takes any offset."""
    e = rpc_error(c, "logs", {"id": jid, "offset": size + 1000})
    check(e is not None and e.code == errs["invalid params"] and
          "%d bytes" % size in e.message,
          "logs past the end of an ended job's %d-byte log: -32602 naming it, got %s"
          % (size, e))
    r = c.call("logs", {"id": jid, "offset": size})
    check(r["offset"] == size and r["eof"] is True, "logs at the end: %r" % (r,))
    q = c.call("submit", {"argv": ["true"], "cwd": "/", "env": [], "wait_free_pct": 100})
    r = c.call("logs", {"id": q["id"], "offset": 1000})
    check(r["offset"] == 1000 and r["eof"] is True, "logs of a live job past its end: %r" % (r,))
    c.call("cancel", {"id": q["id"]})
    e = rpc_error(c, "logs", {"id": q["id"], "offset": 1})
    check(e is not None and e.code == errs["invalid params"] and "0 bytes" in e.message,
          "logs past the empty log of a job that never started: %s" % (e,))


def spawn_group(argv):
    """A real command in a process group of its own, as run does."""
    return subprocess.Popen(argv, start_new_session=True)


def attached_running(d, c, extra=None):
    """An attached job of c's, admitted and running a real process in a
    group of its own (not reaped: it stays a zombie once it dies)."""
    params = {"argv": ["sleep", "30"], "cwd": "/", "attached": True, "wait_free_pct": 10}
    params.update(extra or {})
    r = c.call("submit", params)
    c.notification("admitted", timeout=10)
    proc = spawn_group(["sleep", "30"])
    c.call("job_pid", {"id": r["id"], "pid": proc.pid})
    return r["id"], proc


def check_attached_daemon_end(d, doc):
    """A running attached job the daemon ends (a cancel, a breach) ends, or
    goes back to the queue, once its process is gone (here a zombie its
    client has not reaped), without waiting for job_exit; a later
    job_exit is answered with the job as it is then."""
    text = doc["methods"]["job_exit"]
    check("without waiting for" in text and "answered with the ended Job" in text,
          "PROTOCOL.md, job_exit: says the daemon ends the job without waiting for it")
    a = Client(d.socket)
    other = Client(d.socket)
    jid, proc = attached_running(d, a)
    try:
        other.call("cancel", {"id": jid})
        try:
            n = a.notification("ended", timeout=10)
        except (AssertionError, OSError):
            n = None
        check(n is not None and n["params"]["id"] == jid and n["params"]["state"] == "killed"
              and n["params"]["end_reason"] == "cancel",
              "a cancelled attached job ends (killed, cancel) with no job_exit: %r" % (n,))
        shown = other.call("show", {"id": jid})
        check(shown["state"] == "killed", "show: the job is killed, not %s" % shown["state"])
        running = [j["id"] for j in other.call("status")["jobs"] if j["state"] == "running"]
        check(jid not in running, "status: the ended job is not running")
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    try:
        final = a.call("job_exit", {"id": jid, "signal": 15})
    except RpcError as e:
        final = {"state": "error %d %s" % (e.code, e.message), "end_reason": None}
    check(final["state"] == "killed" and final["end_reason"] == "cancel",
          "a later job_exit is answered with the ended job: %s(%s)"
          % (final["state"], final["end_reason"]))
    if final["state"] == "killed":
        check_result(doc, "job_exit", final)
    # A breach with a retry left: back in the queue, no job_exit needed.
    jid, proc = attached_running(d, a, {"retry_on_breach": 1, "swap_budget_bytes": 1 << 20})
    try:
        write_meminfo(d.proc_root, avail_kb=15 * GIB_KB, swap_total_kb=4 * GIB_KB,
                      swap_free_kb=3 * GIB_KB)
        n = a.notification("breach", timeout=10)
        check(n["params"]["requeued"] is True, "breach with a retry: requeued: %r" % (n,))
        try:
            q = a.notification("queue", timeout=10)
        except (AssertionError, OSError):
            q = None
        check(q is not None and q["params"]["id"] == jid,
              "a breach with retries left requeues with no job_exit (queue note): %r" % (q,))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    e = rpc_error(a, "job_exit", {"id": jid, "signal": 15})
    check(e is None, "job_exit of the attempt the daemon requeued is answered: %s" % (e,))
    shown = a.call("show", {"id": jid})
    check(shown["state"] in ("queued", "admitted") and shown["attempt"] == 2,
          "the requeued job is not ended by the late job_exit: %s attempt %s"
          % (shown["state"], shown.get("attempt")))
    a.call("cancel", {"id": jid})
    write_meminfo(d.proc_root, swap_total_kb=4 * GIB_KB, swap_free_kb=4 * GIB_KB)
    a.close()
    other.close()


def check_spec_items(d, c, doc):
    """Parameters whose range the document gives, as the daemon has them."""
    errs = doc["errors"]
    env = ["PATH=/usr/bin:/bin"]
    e = expect_error(c, "submit", {"argv": ["true"], "cwd": "/", "env": env, "after": []},
                     errs["invalid params"], "submit with after []")
    check(e is None or "after" in e.message, "after []: the refusal names after: %s" % (e,))
    # every integer is capped at 2^53: events' job_id too
    check("`job_id` (1 to 2^53," in doc["methods"]["events"],
          "PROTOCOL.md, events: job_id 1 to 2^53")
    check(rpc_error(c, "events", {"job_id": 2 ** 53}) is None, "events job_id 2^53 is taken")
    expect_error(c, "events", {"job_id": 2 ** 53 + 2}, errs["invalid params"],
                 "events job_id past 2^53")
    # resume: a detached job that has not ended is -32005, an ended one
    # (detached or not) is answered as it ended
    r = c.call("submit", {"argv": ["sleep", "30"], "cwd": "/", "env": env})
    poll(lambda: c.call("show", {"id": r["id"]})["state"] == "running", what="running")
    expect_error(c, "resume", {"id": r["id"]}, errs["wrong state"], "resume of a running detached job")
    c.call("cancel", {"id": r["id"]})
    e = rpc_error(c, "resume", {"id": r["id"]})
    check(e is None or e.code == errs["wrong state"],
          "resume of a detached job being cancelled: the Job or -32005: %s" % (e,))
    c.call("wait", {"id": r["id"]}, timeout=20)
    got = c.call("resume", {"id": r["id"]})
    check(got["state"] == "killed" and got["end_reason"] == "cancel",
          "resume of an ended detached job: answered as it ended: %r" % (got.get("state"),))
    # learning skips a run that was never sampled: show's learned counts a
    # run exactly when the run has a peak
    r = c.call("submit", {"argv": ["true"], "cwd": "/", "env": env, "name": "conf-learn"})
    final = c.call("wait", {"id": r["id"]}, timeout=20)
    learned = c.call("show", {"id": r["id"]})["learned"]
    want = 1 if final["footprint_peak_bytes"] > 0 else 0
    check(learned is not None and learned["runs"] == want,
          "learned runs %r for a run with peak %d (want %d)"
          % (learned and learned["runs"], final["footprint_peak_bytes"], want))


def public_detail_doc(doc):
    """The members PROTOCOL.md (events, "Who sees a `detail`") makes public
    of another user's event detail, by kind."""
    body = doc["methods"]["events"]
    para = body[body.index("Who sees a `detail`"):]
    check("`stage` event's `detail`" in para and "`stage_end`" in para,
          "PROTOCOL.md, events: stage and stage_end details public")
    m = re.search(r"`breach`\s+event's numbers.*?\((.*?); not", para, re.S)
    breach = set(re.findall(r"`([a-z_]+)`", m.group(1))) if m else set()
    check(breach, "PROTOCOL.md, events: the breach's public numbers listed")
    return {"stage": None, "stage_end": None, "breach": breach}


def check_public_details(d, c, doc, breach_id):
    """Another user reads the public part of a job's event details: stage
    and stage_end whole, a breach's numbers without its sentence, and no
    other kind's (PROTOCOL.md, events)."""
    public = public_detail_doc(doc)
    env = ["PATH=/usr/bin:/bin", "HOME=/"]
    r = c.call("submit", {"argv": ["sleep", "30"], "cwd": "/", "env": env,
                          "name": "staged", "on_end": "true"})
    poll(lambda: c.call("show", {"id": r["id"]})["state"] in ("admitted", "running"),
         what="the staged job admitted")
    c.call("stage", {"id": r["id"], "name": "encode"})
    c.call("stage", {"id": r["id"], "name": "decode"})
    c.call("cancel", {"id": r["id"]})
    c.call("wait", {"id": r["id"]}, timeout=20)
    poll(lambda: any(e["kind"] == "on_end" for e in
                     c.call("events", {"job_id": r["id"]})["events"]),
         what="the staged job's on_end event")
    if os.geteuid() != 0:
        print("public details: skipped (another user's connection needs root)")
        return
    os.chmod(d.dir, 0o711)
    other = client_as(65534, d.socket)
    seen = set()
    for jid in (r["id"], breach_id):
        mine = c.call("events", {"job_id": jid, "limit": 1000})["events"]
        theirs = other.call("events", {"job_id": jid, "limit": 1000})["events"]
        check([e["id"] for e in mine] == [e["id"] for e in theirs],
              "another user reads every event of job %d" % jid)
        for a, b in zip(mine, theirs):
            seen.add(a["kind"])
            if a["kind"] not in public:
                check(b["detail"] is None,
                      "%s event of another user's job: detail null, got %r"
                      % (a["kind"], b["detail"]))
                continue
            keep = public[a["kind"]]
            want = {k: v for k, v in (a["detail"] or {}).items()
                    if keep is None or k in keep}
            check(b["detail"] == want, "%s event of another user's job: %r, want %r"
                  % (a["kind"], b["detail"], want))
            if a["kind"] == "breach":
                check("detail" in a["detail"] and "detail" not in b["detail"],
                      "a breach's sentence stays the owner's: %r" % (b["detail"],))
    check({"stage", "stage_end", "breach", "killed", "on_end", "submitted"} <= seen,
          "public details checked on the kinds that matter, saw %s" % sorted(seen))
    other.close()


def quoted_object(text, after):
    """The member names of the first `{"a", "b", ...}` after the words
    after."""
    i = text.index(after)
    m = re.search(r"`\{((?:\"\w+\",?\s*)+)\}`", text[i:])
    return set(re.findall(r'"(\w+)"', m.group(1)))


def check_time_members(d, c):
    """A time limit's kill and each attempt's record carry exactly the
    members the Job's section lists."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    want_kill = quoted_object(text, "with reason\n`time_limit`")
    want_attempt = quoted_object(text, "`attempts` lists each attempt")
    jid = c.call("submit", {"argv": ["sleep", "30"], "cwd": "/", "env": [],
                            "wait_free_pct": 0, "time_limit_ms": 300})["id"]
    j = poll(lambda: (lambda x: x if x["state"] == "killed" else None)(
        c.call("show", {"id": jid})), timeout=15, what="the time limit")
    check(j["end_reason"] == "time_limit", "time limit: end_reason %s" % j["end_reason"])
    check(set(j["kill"] or {}) == want_kill, "time limit: kill members %s, documented %s"
          % (sorted(j["kill"] or {}), sorted(want_kill)))
    check(len(j["attempts"]) == 1 and set(j["attempts"][0]) == want_attempt,
          "attempts: members %s, documented %s" % (j["attempts"], sorted(want_attempt)))


def check_ended_bound():
    """max_ended_jobs_per_uid keeps exactly that many ended jobs of a user
    after its submit (root is exempt: as root, a user's connection)."""
    with Daemon(config="max_ended_jobs_per_uid = 2\n") as d:
        if os.geteuid() == 0:
            os.chmod(d.dir, 0o711)
            c = client_as(65534, d.socket)
        else:
            c = Client(d.socket)
        ids = []
        for _ in range(5):
            q = c.call("submit", {"argv": ["true"], "cwd": "/", "env": [], "wait_free_pct": 95})
            ids.append(q["id"])
            c.call("cancel", {"id": q["id"]})
        # the last submit pruned to 2 ended jobs, then its job ended too
        ended = sorted(j["id"] for j in c.call("status", {"ended": True, "limit": 100})["jobs"])
        check(ended == ids[2:], "max_ended_jobs_per_uid 2: kept %s, want %s" % (ended, ids[2:]))
        c.close()


def main():
    doc = read_doc()
    methods = doc["methods"]
    seen_notes = set()

    with Daemon(extra=["--grace", "1s"]) as d:
        write_meminfo(d.proc_root, swap_total_kb=4 * GIB_KB, swap_free_kb=4 * GIB_KB)
        c = Client(d.socket, hello=False)
        hello = c.call("hello", {"version": 1, "client": "conformance"})
        check_result(doc, "hello", hello)
        listed = set(hello["methods"])
        check(listed == set(methods), "hello lists %s, PROTOCOL.md has sections %s"
              % (sorted(listed), sorted(methods)))
        check(listed == doc["who"], "hello lists %s, the 'who may call' table %s"
              % (sorted(listed), sorted(doc["who"])))

        # Every documented param is known; an unknown one is refused.
        samples = {
            "version": 1, "client": "x", "since_ms": 0, "until_ms": 0, "step_ms": 1000,
            "job_id": 1, "samples": False, "events": False, "pid": os.getpid(),
            "argv": ["true"], "cwd": "/", "env": [], "attached": False, "name": "x",
            "priority": 0, "wait_free_pct": 100, "swap_budget_bytes": 0,
            "expect_bytes": 0, "exclusive": False, "retry_on_breach": 0, "id": 999999,
            "exit_code": 0, "signal": 15, "all": False, "limit": 1,
            "offset": 0, "follow": False, "after_id": 0, "by": "user",
            "uid": 0,
        }
        for name, body in sorted(methods.items()):
            params = param_names(body)
            for p in sorted(params):
                if name == "hello":
                    fresh = Client(d.socket, hello=False)
                    e = rpc_error(fresh, "hello", {"version": 1, p: samples.get(p, 1)})
                    fresh.close()
                else:
                    value = samples.get(p, True)
                    if name == "show" and p == "env":
                        value = True
                    if name == "submit":
                        # a whole valid job, so nothing else is refused
                        args = {"argv": ["true"], "cwd": "/", "env": [],
                                "wait_free_pct": 100}
                        args[p] = value
                        e = rpc_error(c, name, args)
                        if e is None:
                            pass
                    elif name == "cancel_matching":
                        # a filter nothing passes: the call cancels no job
                        e = rpc_error(c, name, {p: value, "state": ["lost"]})
                    else:
                        e = rpc_error(c, name, {p: value})
                check(e is None or "is not a known parameter" not in e.message,
                      "%s: documented param %s is unknown to the daemon: %s"
                      % (name, p, e and e.message))
            if name == "hello":
                fresh = Client(d.socket, hello=False)
                e = expect_error(fresh, "hello", {"version": 1, UNKNOWN: 1}, -32602,
                                 "hello with an unknown param")
                fresh.close()
            else:
                e = expect_error(c, name, {UNKNOWN: 1}, -32602, name + " with an unknown param")
            check(e is None or UNKNOWN in e.message,
                  "%s: the refusal names the param: %s" % (name, e and e.message))
        # A request with several faults is told of one, always the same:
        # the method, then params' shape, unknown members, the listed
        # members' presence and types in the table's order (all before any
        # handler runs), then ranges and cross-field rules, then the object
        # it names.
        order = [
            ("nosuch", {"bogus": 1}, -32601, "unknown method"),
            ("submit", [1], -32600, "must be an object"),
            ("submit", {"bogus": 1, "argv": 5}, -32602, "'bogus' is not a known"),
            ("submit", {"cwd": 5, "attached": "no"}, -32602, "'attached' must be true"),
            ("submit", {"cwd": 5}, -32602, "'argv' is required"),
            ("submit", {"argv": ["true"], "cwd": 5}, -32602, "'cwd' must be a string"),
            ("submit", {"argv": ["true"], "cwd": "/", "env": [], "priority": 1.5,
                        "umask": "x"}, -32602, "'umask' must be an integer"),
            ("submit", {"argv": ["true"], "cwd": "rel", "env": [], "priority": 5000},
             -32602, "cwd must be an absolute path"),
            ("submit", {"argv": ["true"], "cwd": "/"}, -32602, "'env' is required"),
            ("job_exit", {"id": 999999}, -32602, "exactly one of exit_code"),
            ("job_exit", {"id": 999999, "signal": 9}, -32003, "no job 999999"),
            ("cancel", {"id": 0}, -32602, "'id' must be between"),
            ("cancel", {"id": 999999}, -32003, "no job 999999"),
            ("status", {"state": ["sleeping"]}, -32602, "no state 'sleeping'"),
            ("events", {"user": "nosuchuser-sl"}, -32602, "no such user"),
            ("status", {"user": "root", "mine": True}, -32602, "cannot go together"),
            ("cancel_matching", {"all_users": True, "mine": True}, -32602,
             "cannot go with"),
        ]
        for method, params, code, text in order:
            e = expect_error(c, method, params, code, "%s %s" % (method, params))
            check(e is None or text in e.message,
                  "%s %s: expected the error '%s', got '%s'"
                  % (method, params, text, e and e.message))

        # the queued jobs the loop above left behind (wait_free_pct 100)
        for j in c.call("status")["jobs"]:
            if j["state"] == "queued":
                c.call("cancel", {"id": j["id"]})

        info = c.call("info")
        check_result(doc, "info", info)
        poll(lambda: c.call("info")["sample"] is not None, what="a first sample")
        sample = c.call("info")["sample"]
        check(set(sample) == doc["sample"], "Sample: documented %s, sent %s"
              % (sorted(doc["sample"]), sorted(sample)))

        now = int(time.time() * 1000)
        hist = c.call("history", {"since_ms": now - 60000})
        check_result(doc, "history", hist)
        for b in hist["buckets"][:1]:
            m = re.search(r'"buckets": \[(\{.*?\})\]', methods["history"], re.S)
            check(set(b) == top_keys(m.group(1)), "history bucket: documented %s, sent %s"
                  % (sorted(top_keys(m.group(1))), sorted(b)))

        # subscribe: samples and events
        sub = Client(d.socket)
        check_result(doc, "subscribe", sub.call("subscribe", {"samples": True, "events": True}))
        n = sub.notification("sample")
        check_note(doc, n, "subscribe")
        check(set(n["params"]) == doc["sample"], "sample notification members")
        seen_notes.add("sample")

        # submit a detached job: logs, wait, show, status, events, history
        env = ["PATH=/usr/bin:/bin", "HOME=/"]
        res = c.call("submit", {"argv": ["sh", "-c", "echo hello; sleep 0.3; echo world"],
                                "cwd": "/", "env": env, "name": "conf"})
        check_result(doc, "submit", res)
        jid = res["id"]
        lc = Client(d.socket)
        rid = lc.next_id
        lc.next_id += 1
        lc.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "logs",
                                "params": {"id": jid, "offset": 0, "follow": True}}).encode()
                    + b"\n")
        m = lc.response(rid, timeout=20)
        check("result" in m, "logs: %r" % (m,))
        kind, keys = result_of(methods["logs"])
        check(keys <= set(m.get("result", {})), "logs result: documented %s, sent %s"
              % (sorted(keys), sorted(m.get("result", {}))))
        logs = [x for x in lc.notes if x.get("method") == "log"]
        check(logs and "hello" in "".join(x["params"]["data"] for x in logs),
              "logs: log notifications carry the output")
        for x in logs[:1]:
            check_note(doc, x, "logs")
            seen_notes.add("log")
        lc.close()
        final = c.call("wait", {"id": jid}, timeout=20)
        check_result(doc, "wait", final)
        check(final["state"] == "exited", "wait: the job exited: %r" % (final,))
        check_logs_offset(d, c, jid, len(b"hello\nworld\n"), doc["errors"])

        # report: the job just ended is counted; the result and a row's
        # members are the documented ones
        rep = c.call("report", {"name": "conf"})
        check_result(doc, "report", rep)
        m = re.search(r'each row\s*`(\{.*?\})`', methods["report"], re.S)
        want = top_keys(m.group(1))
        check(len(rep["rows"]) == 1 and set(rep["rows"][0]) == want,
              "report row: documented %s, sent %s"
              % (sorted(want), rep["rows"] and sorted(rep["rows"][0])))
        check(rep["rows"] and rep["rows"][0]["runs"] == 1, "report: %r" % (rep,))
        shown = c.call("show", {"id": jid, "env": True})
        # show adds the job's stages (PROTOCOL.md, show) to the Job
        check("stages" in methods["show"] and isinstance(shown.pop("stages", None), list),
              "show: a documented stages list")
        # and what past runs of its name reached (null for a job whose
        # name was not given)
        learned = shown.pop("learned", "absent")
        check("learned" in methods["show"] and
              (learned is None or (isinstance(learned, dict) and
                                   set(learned) == {"runs", "killed", "footprint_peak_bytes",
                                                    "swap_growth_peak_bytes", "stages"})),
              "show: a documented learned, got %r" % (learned,))
        # and the groups it started without (none here)
        dropped = shown.pop("groups_dropped", "absent")
        check("groups_dropped" in methods["show"] and dropped is None,
              "show: a documented groups_dropped, null, got %r" % (dropped,))
        check_job(doc, "show with env", shown, with_env=True)
        check(shown.get("env") == env, "show env: the exact environment, got %r" % (shown.get("env"),))
        st = c.call("status", {"all": True, "limit": 5})
        check_result(doc, "status", st)
        for j in st["jobs"]:
            check_job(doc, "status", j)
        ev = c.call("events", {"after_id": 0, "limit": 100})
        check_result(doc, "events", ev)
        for e in ev["events"]:
            check(set(e) == doc["event"], "Event: documented %s, sent %s"
                  % (sorted(doc["event"]), sorted(e)))
        kinds_doc = set(re.findall(r"`([a-z_]+)`", methods["events"].split("kinds:")[1]
                                          .split("An `on_end`")[0]))
        kinds = {e["kind"] for e in ev["events"]}
        check(kinds <= kinds_doc, "event kinds not documented: %s" % sorted(kinds - kinds_doc))
        n = sub.notification("event")
        check_note(doc, n, "subscribe events")
        seen_notes.add("event")
        jh = c.call("history", {"job_id": jid})
        check_result(doc, "history", jh,
                     result_of(methods["history"], methods["history"].index("With `job_id`")))
        # the default step: about 60 buckets over the job's life, never
        # finer than the sample interval (100 ms here); step_ms 0: raw
        life = final["ended_at_ms"] - final["submitted_at_ms"]
        check(jh["step_ms"] == max(100, life // 60),
              "job history default step: %d for a %d ms job" % (jh["step_ms"], life))
        for b in jh["buckets"][:1]:
            want = top_keys(re.search(r'"buckets": \[(\{.*?\})\]', methods["history"][
                methods["history"].index("With `job_id`"):], re.S).group(1))
            check(set(b) == want, "job history bucket: documented %s, sent %s"
                  % (sorted(want), sorted(b)))
            check(b["n"] >= 1, "job history bucket counts its samples: %r" % (b,))
        raw = c.call("history", {"job_id": jid, "step_ms": 0})
        check(raw["step_ms"] == 0 and len(raw["buckets"]) >= len(jh["buckets"]),
              "job history step_ms 0: every sample")

        # cancel a queued job; cancel again is -32005
        q = c.call("submit", {"argv": ["true"], "cwd": "/", "env": env, "wait_free_pct": 100})
        check_result(doc, "cancel", c.call("cancel", {"id": q["id"]}))
        # the same with a filter: cancel_matching's result; another user
        # may not cancel everyone's
        q2 = c.call("submit", {"argv": ["true"], "cwd": "/", "env": env,
                               "wait_free_pct": 100, "name": "conformance-q2"})
        got = c.call("cancel_matching", {"name": "conformance-q2"})
        check_result(doc, "cancel_matching", got)
        check(got["ids"] == [q2["id"]], "cancel_matching: %r" % (got,))
        if os.geteuid() == 0:
            os.chmod(d.dir, 0o711)
            o = client_as(65534, d.socket)
            expect_error(o, "cancel_matching", {"all_users": True},
                         doc["errors"]["permission denied"],
                         "cancel_matching all_users by another user")
            o.close()
        expect_error(c, "cancel", {"id": q["id"]}, doc["errors"]["wrong state"],
                     "cancel of an ended job")
        expect_error(c, "show", {"id": 999999}, doc["errors"]["no such job"], "show of no job")

        # an attached job: queue, admitted, job_pid, resume, breach, job_exit
        a = Client(d.socket)
        r = a.call("submit", {"argv": ["sleep", "30"], "cwd": "/", "attached": True,
                              "wait_free_pct": 90, "swap_budget_bytes": 1 << 20})
        n = a.notification("queue")
        check_note(doc, n, "attached queued")
        seen_notes.add("queue")
        write_meminfo(d.proc_root, avail_kb=15 * GIB_KB, swap_total_kb=4 * GIB_KB,
                      swap_free_kb=4 * GIB_KB)
        n = a.notification("admitted")
        check_note(doc, n, "attached admitted")
        seen_notes.add("admitted")
        proc = spawn_group(["sleep", "30"])
        try:
            check_result(doc, "job_pid", a.call("job_pid", {"id": r["id"], "pid": proc.pid}))
            # the client goes and comes back
            a.close()
            b = Client(d.socket)
            check_result(doc, "resume", b.call("resume", {"id": r["id"]}))
            write_meminfo(d.proc_root, avail_kb=15 * GIB_KB, swap_total_kb=4 * GIB_KB,
                          swap_free_kb=3 * GIB_KB)
            n = b.notification("breach", timeout=10)
            check_note(doc, n, "attached breach")
            seen_notes.add("breach")
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        sig = -proc.returncode if proc.returncode < 0 else 0
        params = {"id": r["id"], "signal": sig} if sig else {"id": r["id"],
                                                            "exit_code": proc.returncode}
        final = b.call("job_exit", params)
        check_result(doc, "job_exit", final)
        check(final["state"] == "killed" and final["end_reason"] == "swap_budget",
              "breach: killed(swap_budget), got %s(%s)" % (final["state"], final["end_reason"]))
        n = b.notification("ended", timeout=10)
        check(n["params"]["id"] == r["id"] and n["params"]["state"] == "killed",
              "ended: %s" % n)
        seen_notes.add("ended")
        b.close()
        write_meminfo(d.proc_root, swap_total_kb=4 * GIB_KB, swap_free_kb=4 * GIB_KB)
        check_public_details(d, c, doc, r["id"])
        check_time_members(d, c)
        check_attached_daemon_end(d, doc)
        check_spec_items(d, c, doc)

        # metering a pid: process_gone when it ends
        short = subprocess.Popen(["sleep", "0.5"])
        sub.call("subscribe", {"pid": short.pid})
        n = sub.notification("process_gone", timeout=10)
        short.wait()
        check_note(doc, n, "subscribe pid")
        seen_notes.add("process_gone")
        check_result(doc, "unsubscribe", sub.call("unsubscribe"))
        sub.close()

        undone = set(doc["notes"]) - seen_notes
        check(not undone, "documented notifications never seen: %s" % sorted(undone))

        # error codes where the document says they come
        errs = doc["errors"]
        raw = Client(d.socket, hello=False)
        expect_error(raw, "info", None, errs["hello required"], "info before hello")
        raw.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"hello","params":{"version":3}}\n')
        m = raw.response(7)
        check(m.get("error", {}).get("code") == errs["version not supported"]
              and m["error"].get("data", {}).get("versions") == [1, 2],
              "hello version 3: -32001 with data.versions [1, 2]: %r" % (m,))
        # hello answers the version the connection speaks from then on.
        for v in (1, 2):
            vc = Client(d.socket, hello=False)
            h = vc.call("hello", {"version": v})
            check(h["version"] == v, "hello version %d answers it: %r" % (v, h))
            check(vc.call("info")["version"] == v,
                  "info tells the connection's version %d" % v)
            vc.close()
        # The id is echoed unchanged, also where cJSON alone would print it
        # with %g (9.00719925474099e+15), on either error path.
        big = 2 ** 53 - 1
        for line, code in ((b'{"jsonrpc":"2.0","id":%d,"method":"hello",'
                            b'"params":{"version":3}}\n', errs["version not supported"]),
                           (b'{"jsonrpc":"2.0","id":%d,"method":"info"}\n',
                            errs["hello required"])):
            raw.send_raw(line % big)
            while b"\n" not in raw.buf:
                raw.buf += raw.sock.recv(65536)
            text, raw.buf = raw.buf.split(b"\n", 1)
            check(text.startswith(b'{"jsonrpc":"2.0","id":%d,"error":{"code":%d,' % (big, code)),
                  "id 2^53-1 echoed exactly: %r" % (text,))
        raw.call("hello", {"version": 1})
        expect_error(raw, "hello", {"version": 1}, errs["hello required"], "hello twice")
        raw.send_raw(b"not json\n")
        m = raw.read_msg(timeout=5)
        check(m["error"]["code"] == errs["parse error"], "not JSON: %r" % (m,))
        raw.send_raw(b'{"jsonrpc":"2.0","id":8,"method":"info","extra":1}\n')
        m = raw.response(8)
        check(m["error"]["code"] == errs["invalid request"], "extra member: %r" % (m,))
        expect_error(raw, "nope", None, errs["method not found"], "unknown method")
        expect_error(raw, "status", {"limit": 1.5}, errs["invalid params"], "non-integral")
        expect_error(raw, "subscribe", {"pid": 2 ** 31 - 2}, errs["no such process"],
                     "subscribe to no process")
        expect_error(raw, "history", {"since_ms": 0, "until_ms": 10 ** 12, "step_ms": 1},
                     errs["limit reached"], "too many history buckets")
        check(raw.call("info")["version"] == 1, "the connection is still usable")
        check_history_range(raw, errs)
        raw.close()
        check_ids_echoed(d, errs)
        check_notifications(d, errs)
        check_framing(d, errs)
        if os.geteuid() == 0:
            # permission denied, as another user (who must reach the socket)
            os.chmod(d.dir, 0o711)
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.setgid(65534)
                    os.setuid(65534)
                    u = Client(d.socket)
                    e = rpc_error(u, "subscribe", {"pid": 1})
                    code = 0 if e is not None and e.code == errs["permission denied"] else 3
                except Exception as ex:  # reported by the parent's check
                    print("as uid 65534: %r" % (ex,), file=sys.stderr)
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
                  "another user metering pid 1 gets permission denied (%r)" % (status,))

        check(d.alive(), "the daemon is still running")
        check(d.stop() == 0, "the daemon stops cleanly")

    check_ended_bound()

    if failures:
        print("%d failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    print("protocol conformance: all methods, objects, notifications and errors as documented")


if __name__ == "__main__":
    main()
