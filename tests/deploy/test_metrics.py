#!/usr/bin/env python3
"""deploy/metrics-used.txt against what uses it and what exports it.

Static: the list is exactly the faultline_* families that the Grafana dashboard and the alerts
(deploy/prometheus/alerts.yaml and the chart's copy) query; the dashboard is well-formed; every
query parses (promtool check rules over a synthetic rule file, when promtool is installed).
Live (FAULTLINE_BIN): `faultline run` on a temporary file with a test rule and a webhook sink
on 127.0.0.1; one incident is raised; /metrics then has every listed family with its type and
labels; /healthz and /readyz answer 200; SIGHUP reloads (reloads_total{result="success"} + 1);
SIGTERM exits 0 — what the systemd unit and the Kubernetes probes rely on.
"""

import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deploy_common import CHART_DIR, SOURCE_DIR, Cases, use_debian_python  # noqa: E402

use_debian_python("yaml")

import yaml  # noqa: E402

METRICS_USED = os.path.join(SOURCE_DIR, "deploy", "metrics-used.txt")
DASHBOARD = os.path.join(SOURCE_DIR, "deploy", "grafana", "faultline.json")
ALERT_FILES = [os.path.join(SOURCE_DIR, "deploy", "prometheus", "alerts.yaml"),
               os.path.join(CHART_DIR, "files", "alerts.yaml")]
NAME = re.compile(r"\bfaultline_[a-zA-Z0-9_]+")
HIST_SUFFIXES = ("_bucket", "_sum", "_count")


def read_list():
    out = {}
    with open(METRICS_USED, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            assert len(line) >= 2, "%s:%d: name and type needed" % (METRICS_USED, n)
            name, typ, labels = line[0], line[1], line[2:]
            assert typ in ("counter", "gauge", "histogram", "summary"), "%s:%d: type %s" % (METRICS_USED, n, typ)
            assert name not in out, "%s:%d: %s listed twice" % (METRICS_USED, n, name)
            out[name] = (typ, labels)
    return out


def exprs_of_dashboard(d):
    found = []

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k in ("expr", "definition") and isinstance(v, str):
                    found.append(v)
                elif k == "query" and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for x in o:
                walk(x)
    walk(d)
    return found


def exprs_of_alerts(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    return [str(r["expr"]) for g in doc.get("groups") or [] for r in g.get("rules") or [] if "expr" in r]


def family_of(name, listed):
    if name in listed:
        return name
    for s in HIST_SUFFIXES:
        if name.endswith(s) and name[: -len(s)] in listed and listed[name[: -len(s)]][0] == "histogram":
            return name[: -len(s)]
    return name


def grafana_to_promql(expr):
    return (expr.replace("$__rate_interval", "5m").replace("$__range", "1h").replace("$__interval", "1m")
            .replace("$job", ".*").replace("$instance", ".*"))


def t_static(cases):
    listed = read_list()
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    dash_exprs = exprs_of_dashboard(dash)
    alert_exprs = []
    for p in ALERT_FILES:
        if os.path.exists(p):
            alert_exprs += exprs_of_alerts(p)

    def same_set():
        used = {family_of(n, listed) for e in dash_exprs + alert_exprs for n in NAME.findall(e)}
        missing = sorted(used - set(listed))
        unused = sorted(set(listed) - used)
        assert not missing, "queried but not in deploy/metrics-used.txt: %s" % missing
        assert not unused, "in deploy/metrics-used.txt but queried by nothing: %s" % unused
    cases.run("metrics-used.txt lists exactly the families the dashboard and alerts query", same_set)

    def histogram_use():
        for e in dash_exprs + alert_exprs:
            for n in NAME.findall(e):
                fam = family_of(n, listed)
                if fam in listed and listed[fam][0] == "histogram":
                    assert n != fam, "histogram %s queried without _bucket/_sum/_count in %s" % (n, e)
    cases.run("histograms are queried through _bucket, _sum or _count", histogram_use)

    def dashboard_shape():
        assert dash.get("uid") and dash.get("title") and dash.get("schemaVersion", 0) >= 36
        ids = [p["id"] for p in dash["panels"]]
        assert len(ids) == len(set(ids)), "panel ids repeat"
        vars_ = {v["name"] for v in dash["templating"]["list"]}
        assert {"datasource", "job", "instance"} <= vars_, vars_
        for p in dash["panels"]:
            g = p["gridPos"]
            assert g["x"] + g["w"] <= 24, "panel %s overflows the grid" % p["title"]
            if p["type"] == "row":
                continue
            assert p["datasource"]["uid"] == "${datasource}", p["title"]
            refs = [t["refId"] for t in p["targets"]]
            assert len(refs) == len(set(refs)) and refs, "panel %s: refIds %s" % (p["title"], refs)
            for t in p["targets"]:
                if "faultline_" in t["expr"]:
                    assert 'job=~"$job"' in t["expr"], "panel %s ignores $job: %s" % (p["title"], t["expr"])
        titles = " ".join(p["title"].lower() for p in dash["panels"])
        for want in ("incidents raised by rule", "active incidents", "lines read", "lag", "deliveries", "reload"):
            assert want in titles, "no panel about %r" % want
    cases.run("dashboard: ids, grid, datasource variable, $job filter, the on-call panels", dashboard_shape)

    promtool = shutil.which("promtool")

    def promql_parses():
        if not promtool:
            print("     note: promtool not installed; PromQL syntax not checked")
            return
        rules = [{"record": "faultline_deploy_test:q%d" % i, "expr": grafana_to_promql(e)}
                 for i, e in enumerate(dash_exprs) if "label_values" not in e]
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        try:
            p = subprocess.run([promtool, "check", "rules", f.name], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            assert p.returncode == 0, p.stdout
        finally:
            os.unlink(f.name)
    cases.run("every dashboard query is valid PromQL (promtool)", promql_parses)


# ------------------------------------------------------------------------------------------------

class Sink(http.server.BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        Sink.received.append(self.rfile.read(n))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *_):
        pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def get(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def parse_exposition(text):
    types, samples = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(None, 3)
            types[name] = typ.strip()
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
            if m:
                labels = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(3) or ""))
                samples.setdefault(m.group(1), []).append(labels)
    return types, samples


def has_run(binary):
    p = subprocess.run([binary, "run", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return "unknown command" not in p.stdout


def t_live(cases, binary):
    listed = read_list()
    tmp = tempfile.mkdtemp(prefix="fl-metrics-")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = free_port()
    log = os.path.join(tmp, "app.log")
    open(log, "w").close()
    os.makedirs(os.path.join(tmp, "rules"))
    with open(os.path.join(tmp, "rules", "deploy-test.yaml"), "w") as f:
        f.write("id: deploy-test-boom\ntitle: deploy test\nseverity: critical\n"
                "events:\n  boom:\n    regex: 'FAULTLINE_DEPLOY_TEST_BOOM'\n")
    config = {
        "listen": "127.0.0.1:%d" % port,
        "state_dir": os.path.join(tmp, "state"),
        "output": "",
        "rules": {"paths": [os.path.join(tmp, "rules")], "watch": False},
        "sources": [{"type": "file", "paths": [log], "source": "app", "start_at": "beginning"}],
        "sinks": [{"name": "test", "url": "http://127.0.0.1:%d/hook" % httpd.server_address[1], "format": "json"}],
    }
    cfg = os.path.join(tmp, "config.yaml")
    with open(cfg, "w") as f:
        yaml.safe_dump(config, f)
    errlog = open(os.path.join(tmp, "stderr.log"), "w+")
    proc = subprocess.Popen([binary, "run", "--config", cfg], stdout=subprocess.DEVNULL, stderr=errlog)
    base = "http://127.0.0.1:%d" % port

    def stderr_tail():
        errlog.flush()
        errlog.seek(0)
        return errlog.read()[-3000:]

    try:
        def up():
            deadline = time.time() + 20
            while time.time() < deadline:
                assert proc.poll() is None, "faultline run exited %s:\n%s" % (proc.returncode, stderr_tail())
                try:
                    if get(base + "/readyz")[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.2)
            else:
                raise AssertionError("not ready within 20 s:\n" + stderr_tail())
            assert get(base + "/healthz")[0] == 200
        if not cases.run("faultline run serves /healthz and /readyz", up):
            return

        def incident():
            with open(log, "a") as f:
                f.write("2026-01-01T00:00:00Z ERROR FAULTLINE_DEPLOY_TEST_BOOM\n")
            deadline = time.time() + 20
            while time.time() < deadline:
                types, samples = parse_exposition(get(base + "/metrics")[1])
                if samples.get("faultline_incidents_total") and Sink.received:
                    return
                time.sleep(0.25)
            raise AssertionError("no incident counted and delivered within 20 s:\n" + stderr_tail())
        cases.run("an incident is counted and delivered to the webhook", incident)

        def families():
            types, samples = parse_exposition(get(base + "/metrics")[1])
            problems = []
            for name, (typ, labels) in sorted(listed.items()):
                if types.get(name) != typ:
                    problems.append("%s: exported type %s, list says %s" % (name, types.get(name), typ))
                    continue
                series = samples.get(name + ("_count" if typ == "histogram" else ""), [])
                for s in series:
                    if not set(labels) <= s:
                        problems.append("%s: a series lacks labels %s (has %s)" % (name, labels, sorted(s)))
                        break
                if labels and not series:
                    print("     note: %s has no series yet; labels not checked" % name)
            assert not problems, "\n".join(problems)
        cases.run("/metrics exports every family of metrics-used.txt with its type and labels", families)

        def reload():
            def successes():
                text = get(base + "/metrics")[1]
                m = re.search(r'^faultline_reloads_total\{[^}]*result="success"[^}]*\}\s+([0-9.e+]+)', text, re.M)
                return float(m.group(1)) if m else 0.0
            before = successes()
            proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 15
            while time.time() < deadline:
                if successes() > before:
                    assert proc.poll() is None
                    return
                time.sleep(0.2)
            raise AssertionError("SIGHUP did not count a successful reload:\n" + stderr_tail())
        cases.run("SIGHUP reloads the rules (ExecReload=/bin/kill -HUP)", reload)

        def term():
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                raise AssertionError("still running 25 s after SIGTERM")
            assert rc == 0, "exit status %s after SIGTERM:\n%s" % (rc, stderr_tail())
        cases.run("SIGTERM drains and exits 0 within TimeoutStopSec", term)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        httpd.shutdown()
        errlog.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    cases = Cases()
    t_static(cases)
    binary = os.environ.get("FAULTLINE_BIN")
    if binary and os.access(binary, os.X_OK):
        if has_run(binary):
            t_live(cases, binary)
        else:
            print("note: %s has no `run` command yet; the live checks did not run" % binary)
    else:
        print("note: FAULTLINE_BIN not set; the live checks did not run")
    cases.finish()


if __name__ == "__main__":
    main()
