"""An attached job whose end root reports (exit_reporter "root"), as the
Slurm plugin submits each task (proto/PROTOCOL.md, "Slurm tasks"): the
task's own process submits and names its own pid, its connection closes
(at exec) without the job ending client_gone, root reports the exit on
another connection, and a job whose processes end without a report ends
lost (no_report) 10 s later. Its Slurm ids are public and name it.

Root only: the user side runs as nobody.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Client, Daemon, RpcError, client_as, poll, skip  # noqa: E402

NOBODY = 65534


def task(uid):
    """A process of uid's, standing for the task's command."""
    def drop():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return subprocess.Popen(["sleep", "60"], preexec_fn=drop)


def submit_task(c, job, step, taskid, **extra):
    p = {"argv": ["train.sh"], "cwd": "/", "attached": True,
         "slurm_job_id": job, "slurm_step_id": step, "slurm_task_id": taskid,
         "exit_reporter": "root"}
    p.update(extra)
    jid = c.call("submit", p)["id"]
    c.notification("admitted", timeout=10)
    return jid


def expect_error(code, fn, *args):
    try:
        fn(*args)
    except RpcError as e:
        assert e.code == code, (e.code, e.message)
        return e.message
    raise AssertionError("no error %d from %s%r" % (code, fn.__name__, args))


def main():
    if os.geteuid() != 0:
        return skip("needs root: the task runs as another user (nobody)", root_only=True)
    d = Daemon().start()
    procs = []
    try:
        os.chmod(d.dir, 0o711)
        root = Client(d.socket)
        user = client_as(NOBODY, d.socket)

        # What submit refuses.
        base = {"argv": ["x"], "cwd": "/", "attached": True}
        msg = expect_error(-32602, user.call, "submit",
                           dict(base, attached=False, env=[], exit_reporter="root"))
        assert "exit_reporter" in msg, msg
        expect_error(-32602, user.call, "submit", dict(base, exit_reporter="nobody"))
        msg = expect_error(-32602, user.call, "submit", dict(base, slurm_task_id=2))
        assert "slurm_job_id" in msg, msg
        print("ok - submit takes exit_reporter \"root\" for attached jobs only, task ids with a job id")

        # The task: submitted, admitted, its pid named with tree, then the
        # connection closes as at exec. The job runs on.
        jid = submit_task(user, 77, 0, 1)
        p = task(NOBODY)
        procs.append(p)
        user.call("job_pid", {"id": jid, "pid": p.pid, "tree": True})
        user.close()
        time.sleep(0.5)
        j = root.call("show", {"id": jid})
        assert j["state"] == "running", j
        assert (j["slurm_job_id"], j["slurm_step_id"], j["slurm_task_id"]) == (77, 0, 1), j
        assert j["name"] == "slurm-77.0.1" and j["name_given"] is False, j
        assert j["exit_reporter"] == "root", j
        other = root.call("status", {"all": True})["jobs"]
        assert [x["slurm_job_id"] for x in other if x["id"] == jid] == [77]
        print("ok - the job runs on after its connection closes; show names slurm-77.0.1 and its ids")

        # Another connection of the owner's may not report; root may.
        stranger = client_as(NOBODY, d.socket)
        expect_error(-32002, stranger.call, "job_exit", {"id": jid, "exit_code": 3})
        stranger.close()
        p.kill()
        p.wait()
        j = root.call("job_exit", {"id": jid, "exit_code": 3})
        assert j["state"] == "exited" and j["exit_code"] == 3, j
        print("ok - root reports the exit on its own connection; the owner's other connection may not")

        # A plain attached job: root may not report for it.
        user = client_as(NOBODY, d.socket)
        plain = user.call("submit", dict(base))["id"]
        user.notification("admitted", timeout=10)
        expect_error(-32002, root.call, "job_exit", {"id": plain, "exit_code": 0})
        user.call("cancel", {"id": plain})
        print("ok - root's job_exit is refused for a job without exit_reporter")

        # No report: the processes end, nobody says how; lost after 10 s.
        jid = submit_task(user, 78, 2, 0, name="named")
        p = task(NOBODY)
        procs.append(p)
        user.call("job_pid", {"id": jid, "pid": p.pid, "tree": True})
        user.close()
        p.kill()
        p.wait()
        gone = time.monotonic()
        time.sleep(3)
        j = root.call("show", {"id": jid})
        assert j["state"] == "running", j
        assert j["name"] == "named" and j["name_given"] is True, j
        poll(lambda: root.call("show", {"id": jid})["state"] == "lost", timeout=15,
             what="job to end lost")
        waited = time.monotonic() - gone
        j = root.call("show", {"id": jid})
        assert j["end_reason"] == "no_report", j
        assert "no exit status" in j["end_detail"], j
        assert waited >= 9.5, waited
        print("ok - no report: lost (no_report) %.1f s after its processes ended" % waited)
        root.close()
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        d.cleanup()


if __name__ == "__main__":
    sys.exit(main())
