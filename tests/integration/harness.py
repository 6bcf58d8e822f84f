"""Shared helpers for the integration tests: run the real faultline binary on real files (python3 stdlib only).

Each test_*.py is a standalone script that exits non-zero on failure. The environment gives FAULTLINE_BIN,
FAULTLINE_SOURCE_DIR and FAULTLINE_BUILD_DIR (CTest sets them); without them the binary is looked for in the usual
build directories of the source tree.

Counting lines exactly: the tests write lines "LINE <n> ..." with a unique n and run the daemon with the rule
`every-line`, whose state machines are keyed by the captured n — every line becomes its own incident. So "every line
read exactly once" is "the set of n in the incidents (revision 1) is exactly the set written, each once".
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FAULTLINE_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))


def find_binary():
    b = os.environ.get("FAULTLINE_BIN")
    if b:
        return b
    for d in ("build-tail", "build", "build-release"):
        p = os.path.join(SOURCE_DIR, d, "faultline")
        if os.path.exists(p):
            return p
    sys.exit("FAULTLINE_BIN not set and no built faultline found")


BIN = find_binary()

EVERY_LINE_RULE = r"""
id: every-line
title: "line {n}"
severity: warning
events:
  line:
    regex: 'LINE (?P<n>\d+)'
key: [stream, "field:n"]
"""


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_until(pred, timeout=20.0, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise Failure("timed out after %.1fs waiting for %s" % (timeout, what))


class Workdir:
    """A temporary directory with rules/, logs/ and state/; removed at the end unless KEEP_TMP is set."""

    def __init__(self, name):
        self.path = tempfile.mkdtemp(prefix="faultline-it-%s-" % name)
        self.rules = os.path.join(self.path, "rules")
        self.logs = os.path.join(self.path, "logs")
        self.state = os.path.join(self.path, "state")
        os.makedirs(self.rules)
        os.makedirs(self.logs)

    def write_rule(self, name, text):
        with open(os.path.join(self.rules, name), "w") as f:
            f.write(text)

    def cleanup(self):
        if not os.environ.get("KEEP_TMP"):
            shutil.rmtree(self.path, ignore_errors=True)


class Daemon:
    """One `faultline run` process writing incidents to a JSON-lines file and its log (JSON) to a file."""

    def __init__(self, work, args, name="daemon", stdin=None):
        self.work = work
        self.output = os.path.join(work.path, name + ".jsonl")
        self.log_path = os.path.join(work.path, name + ".log")
        self.args = args
        self.name = name
        self.stdin = stdin
        self.proc = None

    def start(self):
        cmd = [BIN, "run", "--rules", self.work.rules, "--state-dir", self.work.state, "--listen", "127.0.0.1:0",
               "--output", self.output, "--log-format", "json", "--log-level", os.environ.get("LOG_LEVEL", "info")]
        cmd += self.args
        self.log = open(self.log_path, "ab")
        self.log_start = self.log.tell()  # this run's lines only (a restarted daemon appends to the same log)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                     stdin=self.stdin if self.stdin is not None else subprocess.DEVNULL)
        # Started once the first scan of the sources is done (files created after this are new files).
        wait_until(lambda: self.logged("following ") or self.logged("standard input") or self.proc.poll() is not None,
                   20, what="daemon start")
        check(self.proc.poll() is None, "daemon exited at start:\n" + self.log_text())
        return self

    def log_lines(self):
        out = []
        try:
            with open(self.log_path, "rb") as f:
                f.seek(getattr(self, "log_start", 0))
                for raw in f:
                    try:
                        out.append(json.loads(raw))
                    except ValueError:
                        out.append({"level": "?", "msg": raw.decode("utf-8", "replace")})
        except FileNotFoundError:
            pass
        return out

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-8000:]
        except FileNotFoundError:
            return ""

    def logged(self, text):
        return any(text in l.get("msg", "") for l in self.log_lines())

    def incidents(self):
        return read_incidents(self.output)

    def send(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("daemon did not stop within %ss" % timeout)
        self.log.close()
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def final_stats(self):
        for l in reversed(self.log_lines()):
            m = l.get("msg", "")
            if m.startswith("stopped: "):
                return json.loads(m[len("stopped: "):])
        return None


def read_incidents(path):
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.endswith(b"\n"):
                    out.append(json.loads(raw))
    except FileNotFoundError:
        pass
    return out


def line_numbers(incidents, rule="every-line"):
    """The n of every first revision of `rule`, as a list (duplicates kept)."""
    return [int(dict(i["fields"].items())["n"]) for i in incidents if i["rule"] == rule and i["revision"] == 1]


def assert_exactly_once(incidents, expected, rule="every-line"):
    got = line_numbers(incidents, rule)
    seen = set()
    dups = sorted({n for n in got if n in seen or seen.add(n)})
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    keys = [(i["id"], i["revision"]) for i in incidents]
    dup_keys = len(keys) - len(set(keys))
    check(not dups, "lines read twice: %s" % dups[:20])
    check(not missing, "lines never read (%d): %s" % (len(missing), missing[:20]))
    check(not extra, "unexpected lines: %s" % extra[:20])
    check(dup_keys == 0, "%d (id, revision) pairs emitted twice" % dup_keys)


def main(test):
    """Runs test(work) in a fresh work dir; prints the result and exits 0/1."""
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    work = Workdir(name)
    ok = False
    try:
        test(work)
        ok = True
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
        print("work dir: %s" % work.path)
        for f in sorted(os.listdir(work.path)):
            if f.endswith(".log"):
                with open(os.path.join(work.path, f), "rb") as fh:
                    tail = fh.read().decode("utf-8", "replace")[-3000:]
                print("---- %s (tail)\n%s" % (f, tail))
    finally:
        if ok:
            work.cleanup()
    if ok:
        print("PASS %s" % name)
    sys.exit(0 if ok else 1)
