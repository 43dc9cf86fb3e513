"""Man pages and shell completions (docs/cli.md, "Man pages and shell
completions"):
- `mandoc -T lint` is clean for stageloadctl(1) (made from the command
  entries), stageloadd(8) and stageload.conf(5): no message at all but
  "referenced manual not found", which only says the pages that refer to
  each other are not installed on this machine;
- `stageloadctl completions SHELL` prints the same as --generate
  complete-SHELL, and refuses another shell (exit 2);
- in bash, zsh and fish, `stageloadctl sta<TAB>` offers status and stage,
  and `stageloadctl hold --<TAB>` offers hold's options (--socket,
  --help) and not --json, which hold does not take; `events --<TAB>`
  offers --lines. zsh is driven on a pseudo-terminal, as a user types.
"""

import os
import select
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from sltest import require_tools  # noqa: E402
from ptyjob import pty_fork  # noqa: E402

BIN_DIR = os.environ.get("SL_BIN", "build/bin")
BIN = os.path.join(BIN_DIR, "stageloadctl")
SRC = os.environ.get("SL_SRC", os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def gen(kind):
    out = subprocess.run([BIN, "--generate", kind], capture_output=True, text=True,
                         timeout=30, check=True)
    return out.stdout


def lint(path):
    out = subprocess.run(["mandoc", "-T", "lint", path], capture_output=True, text=True,
                         timeout=30)
    msgs = [ln for ln in (out.stdout + out.stderr).splitlines()
            if ln and "referenced manual not found" not in ln]
    assert not msgs, (path, msgs)


def bash_complete(script, words):
    cmd = ('. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
           '_stageloadctl; printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", cmd, "-", script, "stageloadctl"] + words,
                         capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.split()


def fish_complete(script, line):
    out = subprocess.run(["fish", "--no-config", "-c",
                          'source "$argv[1]"; complete -C "$argv[2]"', script, line],
                         capture_output=True, text=True, timeout=30, check=True)
    return [ln.split("\t")[0] for ln in out.stdout.splitlines()]


class Zsh:
    """An interactive zsh on a pseudo-terminal with the completion loaded."""

    def __init__(self, fpath_dir, home):
        self.pid, self.fd = pty_fork()
        if self.pid == 0:
            os.environ.update(HOME=home, ZDOTDIR=home, TERM="xterm", PS1="%% ")
            os.execvp("zsh", ["zsh", "-f", "-i"])
        self.send("fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D; "
                  "zstyle ':completion:*' list-rows-first true; "
                  "echo READY-$((6*7))\n" % fpath_dir)
        self.read_until("READY-42")

    def send(self, text):
        os.write(self.fd, text.encode())

    def read_until(self, *wants, timeout=15.0):
        buf = b""
        deadline = time.monotonic() + timeout
        while not all(w.encode() in buf for w in wants):
            left = deadline - time.monotonic()
            assert left > 0, "zsh never showed %r: %r" % (wants, buf[-2000:])
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    buf += os.read(self.fd, 65536)
                except OSError:
                    break
        return buf.decode(errors="replace")

    def complete(self, line, *wants):
        # Ctrl-U clears the line; TAB completes (and lists when ambiguous).
        self.send("\x15" + line + "\t")
        return self.read_until(*wants)

    def close(self):
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def main():
    require_tools("mandoc", "zsh", "fish")
    with tempfile.TemporaryDirectory(prefix="sl-man-") as tmp:
        page = os.path.join(tmp, "stageloadctl.1")
        with open(page, "w") as f:
            f.write(gen("man"))
        for p in (page, os.path.join(SRC, "man", "stageloadd.8"),
                  os.path.join(SRC, "man", "stageload.conf.5")):
            lint(p)
        text = subprocess.run(["mandoc", "-T", "ascii", page], capture_output=True,
                              text=True, check=True).stdout
        assert "events" in text and "completions" in text, text[:500]
        print("ok   mandoc -T lint is clean for stageloadctl(1), stageloadd(8), "
              "stageload.conf(5)")

        for sh in ("bash", "zsh", "fish"):
            out = subprocess.run([BIN, "completions", sh], capture_output=True, text=True,
                                 timeout=30)
            assert out.returncode == 0 and out.stdout == gen("complete-" + sh), sh
        out = subprocess.run([BIN, "completions", "tcsh"], capture_output=True, text=True)
        assert out.returncode == 2 and "bash, zsh or fish, not 'tcsh'" in out.stderr, out
        print("ok   completions SHELL is --generate complete-SHELL")

        bash = os.path.join(tmp, "stageloadctl.bash")
        with open(bash, "w") as f:
            f.write(gen("complete-bash"))
        got = bash_complete(bash, ["sta"])
        assert sorted(got) == ["stage", "status"], got
        got = bash_complete(bash, ["hold", "--"])
        assert "--socket" in got and "--help" in got and "--json" not in got, got
        assert "--lines" in bash_complete(bash, ["events", "--"])
        assert "fish" in bash_complete(bash, ["completions", ""])
        print("ok   bash: sta<TAB> offers stage and status; hold --<TAB> its options")

        fish = os.path.join(tmp, "stageloadctl.fish")
        with open(fish, "w") as f:
            f.write(gen("complete-fish"))
        got = fish_complete(fish, "stageloadctl sta")
        assert sorted(got) == ["stage", "status"], got
        got = fish_complete(fish, "stageloadctl hold --")
        assert "--socket" in got and "--help" in got and "--json" not in got, got
        assert "--lines" in fish_complete(fish, "stageloadctl events --")
        print("ok   fish: sta<TAB> offers stage and status; hold --<TAB> its options")

        zdir = os.path.join(tmp, "zfunc")
        os.makedirs(zdir)
        with open(os.path.join(zdir, "_stageloadctl"), "w") as f:
            f.write(gen("complete-zsh"))
        z = Zsh(zdir, tmp)
        try:
            z.complete("stageloadctl sta", "status", "inside a job")
            out = z.complete("stageloadctl hold --", "--socket", "--help")
            assert "--json" not in out.split("hold --", 1)[-1], out
            z.complete("stageloadctl events --li", "--lines", "--limit")
        finally:
            z.close()
        print("ok   zsh: sta<TAB> offers stage and status; hold --<TAB> its options")
    print("PASS")


if __name__ == "__main__":
    main()
