"""The one Python library for every test and benchmark that starts the faultline binary (python3 stdlib only).

One module of ~840 lines so that every standalone script imports one name; its parts (checks and waiting, the
binary and processes, metrics, work directories, the daemon, scenario steps, peers for e2e) are in that order.

Used by tests/integration (the real binary on real files), tests/e2e (with real Prometheus, Alertmanager and HTTP(S)
receivers on 127.0.0.1), tests/deploy and bench/run_all.py. A script puts this directory on sys.path and imports it:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    import faultline_testlib as tl

What it gives:
- find_binary(): FAULTLINE_BIN, else the first build directory of the source tree (BUILD_DIRS) that has one.
- Workdir: a temporary directory with rules/, logs/ (logs/app.log) and state/.
- Daemon: one `faultline run` on a free port, its JSON log in a file, incidents in a JSON-lines file; start (ready when
  /readyz answers 200, which is also when the first scan of the sources is done), stop (SIGTERM), kill9, log lines,
  incidents, metrics.
- Every process started here is killed when the test fails or the script exits (and with the script itself, through
  the parent-death signal), so no test leaves a process behind.
- run(), scan_incidents(): the binary to its end; Tally: checks that go on after a failure.
- parse_metrics(): the Prometheus text format; wait_until(): waits on a condition with a generous bound (scaled by
  FAULTLINE_TEST_TIME_SCALE), never a fixed sleep; check/Failure/Skip; free_port().
- Receiver, Alertmanager, Prometheus, sinks_yaml, the Standard Webhooks check: what the e2e tests run beside faultline.
- Scenario steps several tests share: follow(), follow_from_start(), Daemon.feed(), Daemon.wait_reloaded(),
  Daemon.settle(), Daemon.finish_exactly_once().
- main(test): runs test(work), stops everything it started, prints PASS / FAIL / SKIP and exits 0 or 1. A Skip (a
  missing tool) fails unless FAULTLINE_ALLOW_SKIP=1 (or FAULTLINE_E2E_ALLOW_SKIP=1).

Counting lines exactly: integration tests write lines "LINE <n> ..." and run the rule `every-line` (EVERY_LINE_RULE),
keyed by the captured n, so every line becomes its own incident: "every line read exactly once" is "the set of n in
the first revisions is exactly the set written, each once" (assert_exactly_once). The e2e tests write "BOOM <n>" and
"RECOVERED <n>" with the rule `e2e-boom` (BOOM_RULE).
"""
import atexit
import base64
import ctypes
import hashlib
import hmac
import http.server
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FAULTLINE_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
# The build directories of the source tree, in the order they are tried (after FAULTLINE_BUILD_DIR).
BUILD_DIRS = ("build", "build-release", "build-tail", "build-out")
TIME_SCALE = float(os.environ.get("FAULTLINE_TEST_TIME_SCALE") or 1)
# The commands the tests start keep their per-user cache (scan's compiled rule databases) in the build tree, never in
# the home directory of whoever runs the tests; a test of the cache itself passes its own environment.
os.environ["XDG_CACHE_HOME"] = os.path.join(
    os.path.abspath(os.environ.get("FAULTLINE_BUILD_DIR") or os.path.join(tempfile.gettempdir(), "faultline-tests")),
    "test-cache")

EVERY_LINE_RULE = r"""
id: every-line
title: "line {n}"
severity: warning
events:
  line:
    regex: 'LINE (?P<n>\d+)'
key: [stream, "field:n"]
"""

BOOM_RULE = r"""
id: e2e-boom
title: "E2E boom {n}"
severity: critical
summary: "Test failure number {n}; token Bearer abcdef0123456789 must be redacted"
remediation: "Nothing to do: it is a test."
references:
  - https://example.com/runbooks/e2e-boom
labels:
  team: e2e
events:
  boom:
    regex: 'BOOM (?P<n>\d+)'
  recovered:
    regex: 'RECOVERED (?P<n>\d+)'
sequence:
  - event: boom
key: [stream, "field:n"]
lifetime:
  quiet: 1h
  resolve_on: [recovered]
"""


# ---- outcomes and waiting ---------------------------------------------------------------------------------------

class Failure(AssertionError):
    """A test's finding. (An AssertionError, so that the deploy tests' case runner reports it as a failed check.)"""


class Skip(Exception):
    """Something the test needs is not there (a tool, a fixture)."""


def check(cond, message):
    if not cond:
        raise Failure(message)


def wait_until(pred, timeout=30.0, interval=0.05, what="condition", alive=None):
    """Polls pred() until it returns something true and returns that. An exception from pred (a server not up yet, a
    half-written line) counts as not yet. `alive`: a Daemon (or Popen) whose exit ends the wait at once."""
    deadline = time.monotonic() + timeout * TIME_SCALE
    last = None
    while True:
        try:
            v = pred()
        except Exception as e:  # noqa: BLE001 - not there yet
            last, v = e, None
        if v:
            return v
        proc = getattr(alive, "proc", alive)
        exited = proc is not None and proc.poll() is not None
        if exited or time.monotonic() >= deadline:
            tail = ("\n" + alive.log_text(3000)) if hasattr(alive, "log_text") else ""
            if exited:
                raise Failure("process exited (%s) while waiting for %s%s" % (proc.returncode, what, tail))
            raise Failure("timed out after %.1fs waiting for %s%s%s"
                          % (timeout * TIME_SCALE, what, " (last error: %s)" % last if last else "", tail))
        time.sleep(interval)


def wait_quiet(value, quiet=1.0, timeout=30.0, what="quiet"):
    """Waits until value() has not changed for `quiet` seconds (the time anything more, a duplicate, would show)."""
    deadline = time.monotonic() + timeout * TIME_SCALE
    last, since = value(), time.monotonic()
    while time.monotonic() - since < quiet:
        check(time.monotonic() < deadline, "timed out after %.1fs waiting for %s" % (timeout * TIME_SCALE, what))
        time.sleep(0.05)
        v = value()
        if v != last:
            last, since = v, time.monotonic()
    return last


class Tally:
    """Checks that go on after a failure (scripts that test many cases in a row): each prints "ok   what" or
    "FAIL what"; finish() prints "N failed" or "all passed" and exits 1 or 0."""

    def __init__(self):
        self.failures = []

    def check(self, cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            self.failures.append(what)
        return cond

    def finish(self):
        print("%d failed" % len(self.failures) if self.failures else "all passed")
        sys.exit(1 if self.failures else 0)


# ---- the binary and processes ------------------------------------------------------------------------------------

def find_binary(required=True):
    """FAULTLINE_BIN, else faultline in FAULTLINE_BUILD_DIR or the first of BUILD_DIRS under the source tree."""
    b = os.environ.get("FAULTLINE_BIN")
    if b:
        return b
    dirs = ([os.environ["FAULTLINE_BUILD_DIR"]] if os.environ.get("FAULTLINE_BUILD_DIR") else []) + \
        [os.path.join(SOURCE_DIR, d) for d in BUILD_DIRS]
    for d in dirs:
        p = os.path.join(d, "faultline")
        if os.access(p, os.X_OK):
            return p
    if required:
        sys.exit("FAULTLINE_BIN not set and no built faultline in %s" % ", ".join(dirs))
    return None


_binary = None


def binary():
    """The faultline binary (find_binary(), looked up once)."""
    global _binary
    if _binary is None:
        _binary = find_binary()
    return _binary


def run(*args, **kwargs):
    """`faultline ARGS...` to its end: subprocess.run with output captured (text unless text=False), 120 s bound."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 120)
    return subprocess.run([binary()] + [str(a) for a in args], **kwargs)


def run_peak(args, timeout=120, input=None, stdin=None):
    """`faultline ARGS...` to its end, or stopped with SIGTERM after `timeout` (scaled): (exit status, None when it
    was stopped; stdout and stderr together as text; the peak RSS of that one process in MiB, from wait4)."""
    p = subprocess.Popen([binary()] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=stdin if stdin is not None else (subprocess.PIPE if input is not None else subprocess.DEVNULL))
    stopped = threading.Event()

    def stop():
        stopped.set()
        p.send_signal(signal.SIGTERM)

    def feed():
        try:
            p.stdin.write(input)
        except (BrokenPipeError, OSError):
            pass  # it stopped reading
        finally:
            p.stdin.close()

    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()), daemon=True)
    reader.start()
    writer = threading.Thread(target=feed, daemon=True) if input is not None else None
    if writer:
        writer.start()
    timer = threading.Timer(timeout * TIME_SCALE, stop)
    timer.start()
    try:
        _, status, usage = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    if writer:
        writer.join()
    p.stdout.close()
    out = b"".join(chunks).decode("utf-8", "replace")
    return (None if stopped.is_set() else p.returncode), out, usage.ru_maxrss / 1024.0


def scan_incidents(*args, input=None, timeout=120):
    """`faultline scan --json ARGS...` (bytes in and out): (exit status, the latest revision of each incident in order
    of first emission, the completed process)."""
    p = run("scan", "--json", *args, input=input, text=False, timeout=timeout)
    latest = {}
    for line in p.stdout.decode().split("\n"):  # JSON lines: U+0085 or U+2028 in a value is no line end
        if line.strip():
            inc = json.loads(line)
            latest[inc["id"]] = inc
    return p.returncode, list(latest.values()), p


_procs = []
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def _die_with_parent():
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: a killed test takes its processes with it


def spawn(cmd, **kwargs):
    """subprocess.Popen that is killed at exit (and when this script dies) unless it has ended by then."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kwargs)
    _procs.append(p)
    return p


def kill_all():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(kill_all)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through atexit, which kills what was started


def stop_process(p, sig=signal.SIGTERM, timeout=30, strict=True, what="process"):
    """Sends sig and waits; on timeout kills it, then raises Failure (strict) or returns the status."""
    if p is None:
        return None
    if p.poll() is None:
        p.send_signal(sig)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            if strict:
                raise Failure("%s did not stop within %ss" % (what, timeout))
    return p.returncode


# ---- HTTP and metrics ----------------------------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, headers=None, timeout=5):
    """(status, headers, body bytes); HTTP errors are returned, not raised."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def http_json(url, headers=None):
    status, _, body = http_get(url, headers)
    check(status == 200, "GET %s: HTTP %s %s" % (url, status, body[:300]))
    return json.loads(body)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


class Metrics:
    """A parsed Prometheus text exposition: `types` (family -> type), `samples` [(name, labels dict, value)]."""

    def __init__(self, text):
        self.types, self.help, self.samples = {}, {}, []
        for line in text.splitlines():
            if line.startswith("# TYPE ") or line.startswith("# HELP "):
                parts = line.split(None, 3)
                if len(parts) >= 3:
                    (self.types if parts[1] == "TYPE" else self.help)[parts[2]] = (parts[3] if len(parts) > 3 else "").strip()
                continue
            if not line.strip() or line.startswith("#"):
                continue
            m = _SAMPLE.match(line.strip())
            if not m:
                raise ValueError("not a sample line: %r" % line)
            labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                      for k, v in _LABEL.findall(m.group(2) or "")}
            self.samples.append((m.group(1), labels, float(m.group(3))))

    def value(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels`; None when there is none."""
        total = None
        for n, have, v in self.samples:
            if n == name and all(have.get(k) == str(x) for k, x in labels.items()):
                total = (total or 0) + v
        return total

    def totals(self):
        """{sample name: sum over all its series}."""
        out = {}
        for n, _, v in self.samples:
            out[n] = out.get(n, 0.0) + v
        return out

    def label_sets(self, name):
        """The label names of each series of `name`."""
        return [set(labels) for n, labels, _ in self.samples if n == name]


def parse_metrics(text):
    return Metrics(text)


# ---- work directory --------------------------------------------------------------------------------------------------

class Workdir:
    """A temporary directory with rules/, logs/ (an empty logs/app.log) and state/; removed at the end unless KEEP_TMP
    is set. With `path`, an existing directory, used as it is (nothing created in it, nothing removed)."""

    def __init__(self, name="test", path=None):
        self.owned = path is None
        self.path = path or tempfile.mkdtemp(prefix="faultline-%s-" % name)
        self.rules = os.path.join(self.path, "rules")
        self.logs = os.path.join(self.path, "logs")
        self.state = os.path.join(self.path, "state")
        self.log_file = os.path.join(self.logs, "app.log")
        self._cleanups = []
        if self.owned:
            os.makedirs(self.rules)
            os.makedirs(self.logs)
            open(self.log_file, "w").close()

    def write_rule(self, name, text):
        with open(os.path.join(self.rules, name), "w") as f:
            f.write(text)

    def file(self, name, text):
        p = os.path.join(self.path, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def append(self, *lines, path=None):
        """Appends lines (each with its newline) to logs/app.log or `path`."""
        with open(path or self.log_file, "a") as f:
            for l in lines:
                f.write(l + "\n")

    def on_cleanup(self, fn):
        """fn() runs at the end of the test, last registered first (main does it, pass or fail)."""
        self._cleanups.append(fn)

    def run_cleanups(self):
        while self._cleanups:
            fn = self._cleanups.pop()
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - keep stopping the others
                print("(while stopping: %s)" % e)

    def cleanup(self):
        self.run_cleanups()
        if self.owned and not os.environ.get("KEEP_TMP"):
            shutil.rmtree(self.path, ignore_errors=True)


def read_incidents(path, cut_lines=None):
    """The revisions of a JSON-lines output, in order. A daemon killed with SIGKILL may have left a line cut short,
    which the next run ends with a newline: with `cut_lines` (a list) such lines are collected there, else they fail
    the parse."""
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                if not raw.endswith(b"\n"):
                    continue
                try:
                    out.append(json.loads(raw))
                except json.JSONDecodeError:
                    if cut_lines is None:
                        raise
                    cut_lines.append(raw)
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


# ---- the daemon ------------------------------------------------------------------------------------------------------

class Daemon:
    """One `faultline run`: HTTP on a free 127.0.0.1 port, its log (JSON) in <work>/<name>.log, incidents in
    <work>/<name>.jsonl.

    The command is `faultline run [--config C] --rules R --state-dir S --listen L --output O --log-format json
    --log-level V ARGS...`; `config` is the config's text (written to <work>/<name>.yaml). With bare=True it is
    `faultline run ARGS...` only (a config that says everything itself; `port` must then be the one it listens on).
    """

    def __init__(self, work, args=(), name="faultline", config=None, port=None, rules=None, state=None, output=None,
                 log_level=None, bare=False, exe=None):
        self.work, self.name, self.args, self.bare = work, name, list(args), bare
        self.exe = exe or binary()
        self.port = port or free_port()
        self.config = work.file(name + ".yaml", config) if config is not None else None
        self.rules = rules or work.rules
        self.state = state or work.state
        self.output = output or os.path.join(work.path, name + ".jsonl")
        self.log_level = log_level or os.environ.get("LOG_LEVEL", "info")
        self.log_path = os.path.join(work.path, name + ".log")
        self.log = None
        self.log_start = 0
        self.proc = None
        self.started_at = None
        self.ready_seconds = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    @property
    def pid(self):
        return self.proc.pid

    def command(self):
        if self.bare:
            return [self.exe, "run"] + self.args
        cmd = [self.exe, "run"] + (["--config", self.config] if self.config else [])
        return cmd + ["--rules", self.rules, "--state-dir", self.state, "--listen", "127.0.0.1:%d" % self.port,
                      "--output", self.output, "--log-format", "json", "--log-level", self.log_level] + self.args

    def start(self, wait=True, timeout=30, poll=0.02, stdin=None):
        """Starts it; with wait, until /readyz answers 200. A port taken meanwhile by someone else: another port."""
        for attempt in range(3):
            self.log = open(self.log_path, "ab")
            self.log_start = self.log.tell()  # this run's lines only (a restarted daemon appends to the same log)
            self.started_at = time.monotonic()
            self.proc = spawn(self.command(), stdout=subprocess.DEVNULL, stderr=self.log,
                              stdin=stdin if stdin is not None else subprocess.DEVNULL)
            self.work.on_cleanup(lambda: self.stop(timeout=10, strict=False))
            if not wait:
                return self
            try:
                self.wait_ready(timeout, poll)
                return self
            except Failure:
                if self.bare or attempt == 2 or self.proc.poll() is None or "in use" not in self.log_text():
                    raise
                self.log.close()
                self.port = free_port()
        return self

    def wait_ready(self, timeout=30, poll=0.02):
        """Waits for /readyz 200; returns the seconds since the start."""
        def ready():
            return self.proc.poll() is not None or http_get(self.base + "/readyz", timeout=2)[0] == 200
        wait_until(ready, timeout, poll, what="%s /readyz" % self.name)
        check(self.proc.poll() is None, "%s exited at start (%s):\n%s" % (self.name, self.proc.returncode,
                                                                          self.log_text()))
        self.ready_seconds = time.monotonic() - self.started_at
        return self.ready_seconds

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def send(self, sig):
        self.proc.send_signal(sig)

    def stop(self, sig=signal.SIGTERM, timeout=30, strict=True):
        """Sends sig (SIGTERM) and waits for the exit; returns the exit status."""
        try:
            return stop_process(self.proc, sig, timeout, strict, what=self.name)
        finally:
            self._close_log()

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self._close_log()

    def _close_log(self):
        if self.log and not self.log.closed and self.proc is not None and self.proc.poll() is not None:
            self.log.close()

    # -- what it wrote

    def log_lines(self):
        out = []
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_start)
                for raw in f:
                    try:
                        out.append(json.loads(raw))
                    except ValueError:
                        out.append({"level": "?", "msg": raw.decode("utf-8", "replace")})
        except FileNotFoundError:
            pass
        return out

    def log_text(self, limit=8000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-limit:]
        except FileNotFoundError:
            return ""

    def logged(self, text):
        return any(text in l.get("msg", "") for l in self.log_lines())

    def incidents(self):
        return read_incidents(self.output)

    def final_stats(self):
        """The counters the daemon logs when it stops ("stopped: {...}")."""
        for l in reversed(self.log_lines()):
            m = l.get("msg", "")
            if m.startswith("stopped: "):
                return json.loads(m[len("stopped: "):])
        return None

    def get(self, path, headers=None, timeout=5):
        return http_get(self.base + path, headers, timeout)

    def metrics(self):
        status, _, body = self.get("/metrics")
        check(status == 200, "GET /metrics: HTTP %s" % status)
        return Metrics(body.decode())

    def metric(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels` (None: no such sample)."""
        return self.metrics().value(name, **labels)

    def cpu_seconds(self, thread=None):
        """utime + stime of the process, or of one of its threads (a thread id; the main thread's is the pid)."""
        stat = "/proc/%d/stat" % self.proc.pid if thread is None else "/proc/%d/task/%d/stat" % (self.proc.pid, thread)
        with open(stat) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory(self):
        """VmRSS, VmHWM, RssAnon, RssFile in bytes (from /proc/<pid>/status)."""
        out = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                    out[k] = int(v.split()[0]) * 1024
        return out

    # -- scenario steps

    def wait_incidents(self, n, timeout=20, what=None):
        """Waits until at least n incidents (revisions) are written."""
        return wait_until(lambda: len(self.incidents()) >= n, timeout, what=what or "%d incident(s)" % n, alive=self)

    def feed(self, *lines, expect, timeout=20, what=None):
        """Appends lines to the work dir's app.log and waits for `expect` incidents in all."""
        self.work.append(*lines)
        return self.wait_incidents(expect, timeout, what or "incidents of %r" % (lines[-1],))

    def wait_reloaded(self, rules, timeout=20, what="the reload"):
        """Waits for "rules reloaded: <rules> rule(s)" in the log."""
        wait_until(lambda: self.logged("rules reloaded: %d rule(s)" % rules), timeout, what=what, alive=self)

    def settle(self, quiet=1.0):
        """Waits until no incident has been written for `quiet` seconds: anything more (a duplicate) would show."""
        wait_quiet(lambda: os.path.getsize(self.output) if os.path.exists(self.output) else 0, quiet)

    def stop_ok(self, sig=signal.SIGTERM):
        rc = self.stop(sig)
        check(rc == 0, "exit status %s" % rc)

    def finish_exactly_once(self, expected, timeout=30, what=None):
        """The end of a reading test: all expected lines in, a quiet second, SIGTERM and exit 0, every line exactly
        once. Returns the final stats."""
        expected = list(expected)
        self.wait_incidents(len(expected), timeout, what or "all %d lines" % len(expected))
        self.settle()
        self.stop_ok()
        assert_exactly_once(self.incidents(), expected)
        return self.final_stats()


def follow(work, args=(), **kwargs):
    """A started Daemon following the work dir's app.log (plus ARGS)."""
    return Daemon(work, ["--source", work.log_file] + list(args), **kwargs).start()


def follow_from_start(work, first, source=None, args=()):
    """app.log holds the line `first` (its incident 1) before a Daemon reading `source` (app.log) from the beginning
    starts; returns the Daemon once that first incident is in."""
    with open(work.log_file, "w") as f:
        f.write(first + "\n")
    d = Daemon(work, ["--source", source or work.log_file, "--start-at", "beginning"] + list(args)).start()
    d.wait_incidents(1, what="line 1")
    return d


# ---- e2e: receivers, Standard Webhooks, Prometheus and Alertmanager -------------------------------------------------

def need_tool(name):
    path = shutil.which(name)
    if not path:
        raise Skip("%s is not installed (apt-get install the packages in deploy/packages-e2e.txt)" % name)
    return path


def sinks_yaml(sinks):
    """YAML for a `sinks:` list from dicts (values: str, int, bool, list of str, dict of str)."""
    out = ["sinks:"]
    for s in sinks:
        first = True
        for k, v in s.items():
            prefix = "  - " if first else "    "
            first = False
            if isinstance(v, dict):
                out.append("%s%s:" % (prefix, k))
                for kk, vv in v.items():
                    out.append("      %s: %s" % (kk, json.dumps(vv)))
            else:
                out.append("%s%s: %s" % (prefix, k, json.dumps(v)))
    return "\n".join(out) + "\n"


def make_secret():
    return "whsec_" + base64.b64encode(os.urandom(24)).decode()


def verify_standard_webhook(secret, headers, body, tolerance=300, now=None):
    """The receiver's check, as the Standard Webhooks spec describes it. Raises ValueError when it fails."""
    h = {k.lower(): v for k, v in headers.items()}
    msg_id, ts, sigs = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
    if not (msg_id and ts and sigs):
        raise ValueError("missing webhook-id, webhook-timestamp or webhook-signature")
    now = time.time() if now is None else now
    if abs(now - int(ts)) > tolerance:
        raise ValueError("timestamp outside the tolerance")
    key = base64.b64decode(secret[len("whsec_"):]) if secret.startswith("whsec_") else secret.encode()
    expected = base64.b64encode(hmac.new(key, ("%s.%s." % (msg_id, ts)).encode() + body, hashlib.sha256).digest())
    for s in sigs.split(" "):
        version, _, sig = s.partition(",")
        if version == "v1" and hmac.compare_digest(sig.encode(), expected):
            return True
    raise ValueError("no matching signature")


class Receiver:
    """An HTTP(S) server on 127.0.0.1 recording every POST; answers `status` (settable) or status_fn(request). Stopped
    at the end of the test when `work` is given."""

    def __init__(self, port=None, tls=None, status=200, work=None):
        self.port = port or free_port()
        self.tls = tls  # (certfile, keyfile)
        self.status = status
        self.status_fn = None
        self.requests = []
        self.lock = threading.Lock()
        self.server = None
        self.work = work

    def start(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                req = {"path": self.path, "headers": dict(self.headers.items()), "body": body, "time": time.time()}
                status = outer.status_fn(req) if outer.status_fn else outer.status
                req["status"] = status
                with outer.lock:
                    outer.requests.append(req)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        if self.work is not None:
            self.work.on_cleanup(self.stop)
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def url(self, path="/hook"):
        return "%s://127.0.0.1:%d%s" % ("https" if self.tls else "http", self.port, path)

    def received(self):
        with self.lock:
            return list(self.requests)


class _Server:
    """A tool run beside faultline on a free port, ready when <base>/-/ready answers 200; its output in a log file."""
    name = "server"

    def __init__(self, work, exe):
        self.work, self.exe = work, exe
        self.port = free_port()
        self.proc = None
        self.log = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def _start(self, args, timeout):
        self.log = open(os.path.join(self.work.path, self.name + ".log"), "ab")
        self.proc = spawn([self.exe] + args, stdout=self.log, stderr=self.log)
        self.work.on_cleanup(self.stop)
        wait_until(lambda: self.proc.poll() is not None or http_get(self.base + "/-/ready")[0] == 200, timeout,
                   what="%s ready" % self.name)
        check(self.proc.poll() is None, "%s exited at start" % self.name)
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            stop_process(self.proc, timeout=15, strict=False)
            self.log.close()


class Alertmanager(_Server):
    name = "alertmanager"

    def __init__(self, work, config=None):
        super().__init__(work, shutil.which("prometheus-alertmanager") or need_tool("alertmanager"))
        self.config = work.file("alertmanager.yml", config or (
            "route:\n  receiver: blackhole\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
            "receivers:\n  - name: blackhole\n"))

    def start(self):
        data = os.path.join(self.work.path, "am-data")
        os.makedirs(data, exist_ok=True)
        # --cluster.listen-address= (empty): no gossip listener on all interfaces; a single local instance.
        return self._start(["--config.file=" + self.config, "--storage.path=" + data,
                            "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address="], 30)

    def alerts(self, **filters):
        q = "&".join("filter=%s" % urllib.request.quote('%s="%s"' % kv) for kv in filters.items())
        return http_json(self.base + "/api/v2/alerts" + ("?" + q if q else ""))


class Prometheus(_Server):
    name = "prometheus"

    def __init__(self, work, scrape_port, alertmanager_port, rule_files):
        super().__init__(work, need_tool("prometheus"))
        rules = "".join("  - %s\n" % r for r in rule_files)
        self.config = work.file("prometheus.yml", (
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "rule_files:\n%s"
            "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:%d']\n"
            "scrape_configs:\n  - job_name: faultline\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
        ) % (rules, alertmanager_port, scrape_port))

    def start(self):
        return self._start(["--config.file=" + self.config,
                            "--storage.tsdb.path=" + os.path.join(self.work.path, "prom-data"),
                            "--web.listen-address=127.0.0.1:%d" % self.port, "--rules.alert.resend-delay=1s"], 60)


def boom_daemon(work, config="", args=(), name="faultline", **kwargs):
    """The e2e set-up: the rule e2e-boom, a config (text; `{}` when empty), following logs/app.log; started."""
    work.write_rule("e2e-boom.yaml", BOOM_RULE)
    return follow(work, args, name=name, config=config or "{}\n", **kwargs)


# ---- running a test script -----------------------------------------------------------------------------------------

def main(test):
    """Runs test(work) in a fresh work dir; stops whatever it started; prints PASS/FAIL/SKIP and exits 0/1."""
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    work = Workdir(name)
    ok = False
    try:
        test(work)
        ok = True
        print("PASS %s" % name)
    except Skip as e:
        if "1" in (os.environ.get("FAULTLINE_ALLOW_SKIP"), os.environ.get("FAULTLINE_E2E_ALLOW_SKIP")):
            ok = True
            print("SKIP %s: %s" % (name, e))
        else:
            print("FAIL %s: %s" % (name, e))
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
    except Exception:  # noqa: BLE001 - a bug in the test or an unexpected error: show it whole
        print("FAIL %s:\n%s" % (name, traceback.format_exc()))
    finally:
        work.run_cleanups()
        kill_all()
        if not ok:
            print("work dir: %s" % work.path)
            for f in sorted(os.listdir(work.path)):
                if f.endswith(".log"):
                    with open(os.path.join(work.path, f), "rb") as fh:
                        print("---- %s (tail)\n%s" % (f, fh.read().decode("utf-8", "replace")[-3000:]))
        else:
            work.cleanup()
    sys.exit(0 if ok else 1)
