"""Shared helpers for the end-to-end tests: the real faultline binary with real Prometheus, Alertmanager and HTTP(S)
receivers, all on 127.0.0.1 with free ports (python3 stdlib only).

Each test_*.py is a standalone script that exits non-zero on failure (CTest runs them with FAULTLINE_BIN,
FAULTLINE_SOURCE_DIR and FAULTLINE_BUILD_DIR set). Tests that need a tool that is missing (prometheus,
prometheus-alertmanager, promtool, openssl; see deploy/packages-e2e.txt) fail, unless FAULTLINE_E2E_ALLOW_SKIP=1,
where they print SKIP and exit 0.

Incidents: the tests write lines "BOOM <n>" (and "RECOVERED <n>") to a log file followed by `faultline run` with the
rule `e2e-boom`, keyed by n, so every n is its own incident and RECOVERED n resolves it.
"""
import base64
import hashlib
import hmac
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("FAULTLINE_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))


def find_binary():
    b = os.environ.get("FAULTLINE_BIN")
    if b:
        return b
    for d in ("build-out", "build", "build-release"):
        p = os.path.join(SOURCE_DIR, d, "faultline")
        if os.path.exists(p):
            return p
    sys.exit("FAULTLINE_BIN not set and no built faultline found")


BIN = find_binary()

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


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def need_tool(name):
    path = shutil.which(name)
    if not path:
        raise Skip("%s is not installed (apt-get install the packages in deploy/packages-e2e.txt)" % name)
    return path


def wait_until(pred, timeout=30.0, interval=0.1, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = pred()
        except Exception as e:  # a server that is not up yet
            last = e
            v = None
        if v:
            return v
        time.sleep(interval)
    raise Failure("timed out after %.1fs waiting for %s%s" % (timeout, what, " (last error: %s)" % last if last else ""))


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


# ---- Standard Webhooks ------------------------------------------------------------------------------------------

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


# ---- receivers ----------------------------------------------------------------------------------------------------

class Receiver:
    """An HTTP(S) server on 127.0.0.1 recording every POST; answers `status` (settable) or status_fn(request)."""

    def __init__(self, port=None, tls=None, status=200):
        self.port = port or free_port()
        self.tls = tls  # (certfile, keyfile)
        self.status = status
        self.status_fn = None
        self.requests = []
        self.lock = threading.Lock()
        self.server = None
        self.thread = None

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
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
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


# ---- faultline ----------------------------------------------------------------------------------------------------

class Workdir:
    def __init__(self, name):
        self.path = tempfile.mkdtemp(prefix="faultline-e2e-%s-" % name)
        self.rules = os.path.join(self.path, "rules")
        self.state = os.path.join(self.path, "state")
        self.log_file = os.path.join(self.path, "app.log")
        os.makedirs(self.rules)
        with open(os.path.join(self.rules, "e2e-boom.yaml"), "w") as f:
            f.write(BOOM_RULE)
        open(self.log_file, "w").close()

    def file(self, name, text):
        p = os.path.join(self.path, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def append(self, *lines):
        with open(self.log_file, "a") as f:
            for l in lines:
                f.write(l + "\n")

    def cleanup(self):
        if not os.environ.get("KEEP_TMP"):
            shutil.rmtree(self.path, ignore_errors=True)


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


class Faultline:
    """One `faultline run` following the work dir's app.log, HTTP on a free port, JSON log to a file."""

    def __init__(self, work, config_text="", args=None, name="faultline", port=None):
        self.work = work
        self.name = name
        self.port = port or free_port()
        self.config = work.file(name + ".yaml", config_text or "{}\n")
        self.args = args or []
        self.log_path = os.path.join(work.path, name + ".log")
        self.output = os.path.join(work.path, name + ".jsonl")
        self.proc = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self, wait_ready=True):
        cmd = [BIN, "run", "--config", self.config, "--rules", self.work.rules, "--state-dir", self.work.state,
               "--source", self.work.log_file, "--listen", "127.0.0.1:%d" % self.port, "--output", self.output,
               "--log-format", "json", "--log-level", os.environ.get("LOG_LEVEL", "info")] + self.args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL)
        if wait_ready:
            wait_until(lambda: self.proc.poll() is not None or http_get(self.base + "/readyz")[0] == 200, 30,
                       what="faultline /readyz")
            check(self.proc.poll() is None, "faultline exited at start:\n" + self.log_text())
        return self

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")[-6000:]
        except FileNotFoundError:
            return ""

    def metrics(self):
        status, _, body = http_get(self.base + "/metrics")
        check(status == 200, "GET /metrics: HTTP %s" % status)
        return body.decode()

    def metric(self, name, **labels):
        """Sum of the samples of `name` whose labels include `labels`."""
        total = None
        for line in self.metrics().splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            head, _, value = line.rpartition(" ")
            metric, _, lab = head.partition("{")
            if metric != name:
                continue
            have = {}
            for part in lab.rstrip("}").split(","):
                if "=" in part:
                    k, _, v = part.partition("=")
                    have[k] = v.strip('"')
            if all(have.get(k) == str(v) for k, v in labels.items()):
                total = (total or 0) + float(value)
        return total

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure("faultline did not stop within %ss" % timeout)
        finally:
            self.log.close()
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


# ---- Prometheus and Alertmanager ------------------------------------------------------------------------------------

class Alertmanager:
    def __init__(self, work, config=None):
        self.bin = need_tool("prometheus-alertmanager") if shutil.which("prometheus-alertmanager") else need_tool("alertmanager")
        self.work = work
        self.port = free_port()
        self.config = work.file("alertmanager.yml", config or (
            "route:\n  receiver: blackhole\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n"
            "receivers:\n  - name: blackhole\n"))
        self.proc = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        data = os.path.join(self.work.path, "am-data")
        os.makedirs(data, exist_ok=True)
        self.log = open(os.path.join(self.work.path, "alertmanager.log"), "ab")
        # --cluster.listen-address= (empty): no gossip listener on all interfaces; a single local instance.
        self.proc = subprocess.Popen(
            [self.bin, "--config.file=" + self.config, "--storage.path=" + data,
             "--web.listen-address=127.0.0.1:%d" % self.port, "--cluster.listen-address="],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        wait_until(lambda: self.proc.poll() is not None or http_get(self.base + "/-/ready")[0] == 200, 30,
                   what="alertmanager ready")
        check(self.proc.poll() is None, "alertmanager exited at start")
        return self

    def alerts(self, **filters):
        q = "&".join("filter=%s" % urllib.request.quote('%s="%s"' % kv) for kv in filters.items())
        return http_json(self.base + "/api/v2/alerts" + ("?" + q if q else ""))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


class Prometheus:
    def __init__(self, work, scrape_port, alertmanager_port, rule_files):
        self.bin = need_tool("prometheus")
        self.work = work
        self.port = free_port()
        rules = "".join("  - %s\n" % r for r in rule_files)
        self.config = work.file("prometheus.yml", (
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "rule_files:\n%s"
            "alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:%d']\n"
            "scrape_configs:\n  - job_name: faultline\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n"
        ) % (rules, alertmanager_port, scrape_port))
        self.proc = None

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        data = os.path.join(self.work.path, "prom-data")
        self.log = open(os.path.join(self.work.path, "prometheus.log"), "ab")
        self.proc = subprocess.Popen(
            [self.bin, "--config.file=" + self.config, "--storage.tsdb.path=" + data,
             "--web.listen-address=127.0.0.1:%d" % self.port, "--rules.alert.resend-delay=1s"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL)
        wait_until(lambda: self.proc.poll() is not None or http_get(self.base + "/-/ready")[0] == 200, 60,
                   what="prometheus ready")
        check(self.proc.poll() is None, "prometheus exited at start")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


# ---- running a test -------------------------------------------------------------------------------------------------

def main(test):
    """Runs test(work, cleanup) in a fresh work dir; prints PASS/FAIL/SKIP and exits 0/1."""
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    work = Workdir(name)
    stoppers = []
    ok = False
    try:
        test(work, stoppers)
        ok = True
        print("PASS %s" % name)
    except Skip as e:
        if os.environ.get("FAULTLINE_E2E_ALLOW_SKIP") == "1":
            ok = True
            print("SKIP %s: %s" % (name, e))
        else:
            print("FAIL %s: %s" % (name, e))
    except Failure as e:
        print("FAIL %s: %s" % (name, e))
    finally:
        for s in reversed(stoppers):
            try:
                s()
            except Exception as e:  # keep stopping the others
                print("(while stopping: %s)" % e)
        if not ok:
            print("work dir: %s" % work.path)
            for f in sorted(os.listdir(work.path)):
                if f.endswith(".log") and f != "app.log":
                    with open(os.path.join(work.path, f), "rb") as fh:
                        print("---- %s (tail)\n%s" % (f, fh.read().decode("utf-8", "replace")[-3000:]))
        else:
            work.cleanup()
    sys.exit(0 if ok else 1)
