#!/usr/bin/env python3
"""deploy/helm/faultline/files/logtee.py: the wrapper that tees an inference server's output to
a size-rotated file for the faultline sidecar. Checks what the sidecar example relies on:
nothing lost or reordered, bounded rotation at line boundaries, the command's exit status
(and 128+N for a signal), SIGTERM forwarded, the last lines before a crash kept, a grandchild
holding the pipe open does not hang it, SIGPIPE restored for the command, a broken file does
not stop the output to stdout."""

import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import CHART_DIR, Cases  # noqa: E402

LOGTEE = os.path.join(CHART_DIR, "files", "logtee.py")
PY = sys.executable


def logtee(tmp, args, cmd, **kw):
    return subprocess.Popen([PY, LOGTEE, "--file", os.path.join(tmp, "app.log")] + args + ["--"] + cmd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def read_rotated(tmp, backups):
    parts = []
    for i in range(backups, 0, -1):
        p = os.path.join(tmp, "app.log.%d" % i)
        if os.path.exists(p):
            with open(p, "rb") as f:
                parts.append(f.read())
    with open(os.path.join(tmp, "app.log"), "rb") as f:
        parts.append(f.read())
    return parts


def t_rotation():
    with tempfile.TemporaryDirectory() as tmp:
        n, max_bytes, backups = 20000, 64 * 1024, 3
        script = ("import sys\nfor i in range(%d):\n    print('line %%06d ' %% i + 'x' * (i %% 97), "
                  "file=sys.stderr if i %% 5 == 0 else sys.stdout, flush=(i %% 7 == 0))\nsys.exit(3)\n" % n)
        p = logtee(tmp, ["--max-bytes", str(max_bytes), "--backups", str(backups)], [PY, "-u", "-c", script])
        out, err = p.communicate(timeout=60)
        assert p.returncode == 3, "exit %s, stderr %s" % (p.returncode, err[-500:])
        lines = out.decode().splitlines()
        assert len(lines) == n and [int(l.split()[1]) for l in lines] == list(range(n)), "stdout lost or reordered lines"
        parts = read_rotated(tmp, backups)
        assert len(parts) == backups + 1, "expected %d files, got %d" % (backups + 1, len(parts))
        longest = max(len(l) + 1 for l in lines)
        for part in parts[:-1]:
            assert part.endswith(b"\n"), "a rotated file ends inside a line"
            assert max_bytes <= len(part) < max_bytes + longest, "rotated at %d bytes" % len(part)
        assert len(parts[-1]) <= max_bytes + longest
        kept = b"".join(parts).decode().splitlines()
        assert kept == lines[-len(kept):], "the files are not the tail of the output, in order"
        assert not os.path.exists(os.path.join(tmp, "app.log.%d" % (backups + 1)))


def t_signal_forwarded():
    with tempfile.TemporaryDirectory() as tmp:
        script = ("import signal, sys, time\n"
                  "def h(*_):\n    print('got SIGTERM, draining', flush=True); sys.exit(0)\n"
                  "signal.signal(signal.SIGTERM, h)\nprint('ready', flush=True)\ntime.sleep(60)\n")
        p = logtee(tmp, [], [PY, "-c", script])
        assert p.stdout.readline() == b"ready\n"
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=20)
        assert p.returncode == 0, p.returncode
        assert time.time() - t0 < 10
        with open(os.path.join(tmp, "app.log"), "rb") as f:
            assert f.read() == b"ready\ngot SIGTERM, draining\n"


def t_killed_by_signal():
    with tempfile.TemporaryDirectory() as tmp:
        p = logtee(tmp, [], ["sh", "-c", "echo 'CUDA error: an illegal memory access was encountered'; kill -9 $$"])
        out, _ = p.communicate(timeout=20)
        assert p.returncode == 128 + 9, p.returncode
        with open(os.path.join(tmp, "app.log"), "rb") as f:
            assert f.read() == b"CUDA error: an illegal memory access was encountered\n", "last line lost"


def t_grandchild_holds_pipe():
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.time()
        p = logtee(tmp, ["--drain-timeout", "1"], ["sh", "-c", "sleep 30 & echo bye; exit 7"])
        out, err = p.communicate(timeout=20)
        assert p.returncode == 7, p.returncode
        assert time.time() - t0 < 10, "waited for the grandchild"
        assert b"bye" in out and b"still holds its output open" in err


def t_not_found():
    with tempfile.TemporaryDirectory() as tmp:
        p = logtee(tmp, [], ["/nonexistent/vllm", "serve"])
        out, err = p.communicate(timeout=20)
        assert p.returncode == 127, p.returncode
        # Written by the child, so it lands where the command's output goes (stdout and the file).
        assert b"cannot run /nonexistent/vllm" in out


def t_sigpipe_default():
    with tempfile.TemporaryDirectory() as tmp:
        p = logtee(tmp, [], ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"])
        out, _ = p.communicate(timeout=20)
        ign = int([l for l in out.decode().splitlines() if l.startswith("SigIgn")][0].split()[1], 16)
        assert not ign & (1 << (signal.SIGPIPE - 1)), "SIGPIPE is ignored in the command"
        assert not ign & (1 << (signal.SIGXFSZ - 1)), "SIGXFSZ is ignored in the command"


def t_broken_file():
    with tempfile.TemporaryDirectory() as tmp:
        blocker = os.path.join(tmp, "notadir")
        open(blocker, "w").close()
        p = subprocess.Popen([PY, LOGTEE, "--file", os.path.join(blocker, "app.log"), "--", "sh", "-c",
                              "echo one; echo two"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate(timeout=20)
        assert p.returncode == 0 and out == b"one\ntwo\n", (p.returncode, out)
        assert b"cannot open" in err


def t_in_chart_configmap():
    # The chart ships this very file; it must stay stdlib-only and run on the Python versions
    # of inference images (3.9+: os.waitstatus_to_exitcode).
    with open(LOGTEE, encoding="utf-8") as f:
        src = f.read()
    imports = {l.split()[1].split(".")[0] for l in src.splitlines() if l.startswith(("import ", "from "))}
    assert imports <= {"argparse", "errno", "os", "select", "signal", "sys", "time"}, imports


def main():
    cases = Cases()
    cases.run("20000 lines: stdout complete and in order; rotation bounded, at line ends; exit status kept",
              t_rotation)
    cases.run("SIGTERM is forwarded; the command's last words reach the file", t_signal_forwarded)
    cases.run("a command killed by SIGKILL: exit 137, its last line kept", t_killed_by_signal)
    cases.run("a grandchild holding the pipe: exit after --drain-timeout", t_grandchild_holds_pipe)
    cases.run("a missing command: exit 127 with a message", t_not_found)
    cases.run("the command runs with SIGPIPE and SIGXFSZ at their defaults", t_sigpipe_default)
    cases.run("an unwritable file: output still goes to stdout", t_broken_file)
    cases.run("logtee.py imports only the standard library", t_in_chart_configmap)
    cases.finish()


if __name__ == "__main__":
    main()
