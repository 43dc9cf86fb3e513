"""The config file in use and the effective defaults (docs/daemon.md,
"Config file"; PROTOCOL.md, info):
- without --config the daemon reads $STAGELOAD_CONFIG (as root, else
  /etc/stageload.conf when it exists); `info --json` names the file
  (`config_path`) and has the job defaults and limits it set;
- with STAGELOAD_CONFIG empty no file is read: config_path null and the
  built-in defaults;
- `info` prints the file and the defaults;
- as root, a default config file others may write is refused (exit 2),
  as --config's is.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import Daemon  # noqa: E402

BIN = os.path.join(os.environ.get("SL_BIN", "build/bin"), "stageloadctl")


def ctl(sock, *args):
    out = subprocess.run([BIN, "--socket", sock] + list(args), capture_output=True,
                         text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, (args, out.returncode, out.stdout, out.stderr)
    return out.stdout


def main():
    d = Daemon()
    conf = os.path.join(d.dir, "default.conf")
    with open(conf, "w") as f:
        f.write("# a default config\nwait_free = 12\nswap_budget = 1G\n"
                "max_running = 3\ngrace = 2s\nmax_queued_per_uid = 77\n")
    os.chmod(conf, 0o644)
    d.env = {"STAGELOAD_CONFIG": conf}
    with d:
        info = json.loads(ctl(d.socket, "info", "--json"))
        assert info["config_path"] == conf, info.get("config_path")
        df = info["defaults"]
        assert df["wait_free_pct"] == 12 and df["swap_budget_bytes"] == 1 << 30, df
        assert df["max_running"] == 3 and df["grace_ms"] == 2000, df
        assert df["settle_ms"] == 30000 and df["hol_bound_ms"] == 600000, df
        lim = info["limits"]
        assert lim["max_queued_per_uid"] == 77 and lim["max_log_bytes"] == 1 << 30, lim
        assert lim["min_free_disk"] == "auto", lim
        text = ctl(d.socket, "info")
        assert "config     " + conf in text, text
        assert "wait_free 12%, swap_budget 1.0G, max_running 3" in text, text
        assert "grace 2.0s, settle 30s" in text, text
        print("ok   the default config file is read; info --json has it, the "
              "defaults and the limits; info prints them")

    with Daemon(env={"STAGELOAD_CONFIG": ""}) as d:
        info = json.loads(ctl(d.socket, "info", "--json"))
        assert info["config_path"] is None, info["config_path"]
        assert info["defaults"]["swap_budget_bytes"] == 0, info["defaults"]
        assert info["defaults"]["grace_ms"] == 10000, info["defaults"]
        assert "config     none" in ctl(d.socket, "info")
        print("ok   STAGELOAD_CONFIG empty: no file, built-in defaults")

    if os.geteuid() == 0:
        d = Daemon()
        try:
            conf = os.path.join(d.dir, "open.conf")
            with open(conf, "w") as f:
                f.write("wait_free = 5\n")
            os.chmod(conf, 0o666)
            env = dict(os.environ, STAGELOAD_CONFIG=conf)
            out = subprocess.run(d.args, capture_output=True, text=True,
                                 timeout=30, env=env, stdin=subprocess.DEVNULL)
            assert out.returncode == 2, (out.returncode, out.stderr)
            assert "refusing config file " + conf in out.stderr, out.stderr
            print("ok   as root, a default config file others may write is refused")
        finally:
            d.cleanup()
    else:
        print("skip the root-only check of a default config file others may write")
    print("PASS")


if __name__ == "__main__":
    main()
