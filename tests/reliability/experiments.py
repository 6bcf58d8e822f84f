"""The campaign's own experiments (those no integration or end-to-end test already is), one function each: it
takes the campaign's context (a work dir, quick or full sizes), raises on failure and returns its figure.
Imported by campaign.py, which runs them and prints the table."""
import os
import random
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

OOM = ("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.19 GiB of which 1.02 GiB is free.")
GOOD_RULE = "id: t-1\ntitle: t\nseverity: warning\nevents:\n  e:\n    regex: 'abc'\n"



def run_child_rss(args, timeout=120, input=None, stdin=None):
    """faultline ARGS to its end (or `timeout`): (exit status or None when stopped, output, its peak RSS in MiB)."""
    return tl.run_peak(args, timeout=timeout, input=input, stdin=stdin)


# ---- 1: bad input to the commands ----------------------------------------------------------------------------------

def exp_1a(c):
    """`scan` on bad input: random bytes, NUL bytes, invalid UTF-8, one huge line, a sparse file, a directory, a missing
    file, a FIFO, /dev/null, random bytes on stdin: no crash, clear errors, exit 2 where unreadable, bounded RSS."""
    d = c.work.path
    mb = c.size(4, 10) << 20
    files = {
        "random": os.urandom(mb),
        "nul": b"\0" * mb,
        "utf8": b"\xff\xfe bad \xc3\x28 line\n" * c.size(20000, 100000),
        "oneline": b"A" * c.size(20 << 20, 100 << 20),
    }
    peak = 0.0
    for name, data in files.items():
        p = os.path.join(d, name + ".log")
        with open(p, "wb") as f:
            f.write(data)
        rc, out, rss = run_child_rss(["scan", p])
        peak = max(peak, rss)
        check(rc in (0, 1), "scan %s: exit %s\n%s" % (name, rc, out[-500:]))
    sparse = os.path.join(d, "sparse.log")
    with open(sparse, "wb") as f:
        f.truncate(c.size(256 << 20, 2 << 30))
    rc, out, rss = run_child_rss(["scan", sparse], timeout=300)
    peak = max(peak, rss)
    check(rc in (0, 1), "scan sparse: exit %s" % rc)
    for what, path in (("a directory", d), ("a missing file", os.path.join(d, "missing.log"))):
        rc, out, _ = run_child_rss(["scan", path], timeout=30)
        check(rc == 2 and path in out, "scan on %s: exit %s, %r" % (what, rc, out[-300:]))
    # A FIFO is read like standard input (`scan <(kubectl logs ...)`): to its writer's end.
    fifo = os.path.join(d, "fifo.log")
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as w:
            w.write(b"2026-11-30T00:00:00Z " + OOM.encode() + b"\n")
    import threading
    threading.Thread(target=feed, daemon=True).start()
    rc, incidents, _ = tl.scan_incidents(fifo, timeout=60)
    check(rc == 1 and [i["rule"] for i in incidents] == ["cuda-out-of-memory"],
          "scan on a FIFO: exit %s, %s" % (rc, [i["rule"] for i in incidents]))
    rc, out, _ = run_child_rss(["scan", "/dev/null"], timeout=30)
    check(rc in (0, 1, 2), "scan /dev/null: exit %s" % rc)
    rc, out, rss = run_child_rss(["scan", "-"], input=os.urandom(c.size(8, 200) << 20), timeout=300)
    peak = max(peak, rss)
    check(rc in (0, 1), "scan - on random bytes: exit %s" % rc)
    check(peak < 256, "peak RSS %.0f MB" % peak)
    return "no crash; unreadable input exit 2; peak RSS %.0f MB" % peak


def exp_1b(c):
    """`scan /dev/zero` and `scan - < /dev/zero`: one endless line, truncated; runs until stopped with flat RSS."""
    seconds = c.size(5, 30)
    rc, out, rss_file = run_child_rss(["scan", "/dev/zero"], timeout=seconds)
    check(rc is None, "scan /dev/zero ended on its own (exit %s): %s" % (rc, out[-300:]))
    with open("/dev/zero", "rb") as zero:
        rc, out, rss_stdin = run_child_rss(["scan", "-"], stdin=zero, timeout=seconds)
    check(rc is None, "scan - < /dev/zero ended on its own (exit %s)" % rc)
    check(max(rss_file, rss_stdin) < 128, "RSS %.0f / %.0f MB" % (rss_file, rss_stdin))
    return "bounded until stopped after %d s; peak RSS %.0f MB" % (seconds, max(rss_file, rss_stdin))


def exp_1c(c):
    """`check`/`test` on random bytes, a NUL file and an empty directory: a positioned error; exit 1 for what a file
    says, 2 for what cannot be read."""
    d = c.work.path
    rnd = c.work.file("random.yaml", "")
    with open(rnd, "wb") as f:
        f.write(os.urandom(1 << 20))
    nul = c.work.file("nul.yaml", "\0" * 4096)
    empty = os.path.join(d, "no-rules")
    os.makedirs(empty)
    for cmd in ("check", "test"):
        for path, want in ((rnd, (1,)), (nul, (1,)), (empty, (2,))):
            p = tl.run(cmd, path, timeout=60, errors="replace")
            check(p.returncode in want, "%s %s: exit %d" % (cmd, os.path.basename(path), p.returncode))
            check(path in p.stderr + p.stdout, "%s %s: the file is not named" % (cmd, os.path.basename(path)))
    return "positioned errors; exit 1 (content) / 2 (unreadable)"


def exp_1d(c):
    """Hostile rule YAML: deep nesting, anchors (billion laughs), duplicate ids, tabs, non-mappings, many documents,
    huge numbers and durations: each rejected with a position, no crash."""
    depth = c.size(20000, 100000)
    laughs = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n" % ((chr(98 + i), chr(98 + i)) + (chr(97 + i),) * 9)
        for i in range(8))
    cases = {
        "deep-flow": "id: [" * depth + "\n",
        "deep-map": "".join("  " * i + "k%d:\n" % i for i in range(c.size(2000, 5000))),
        "laughs": laughs,
        "tabs": "id: t-1\n\ttitle: t\n",
        "scalar": "just a string\n",
        "multi": GOOD_RULE + "---\n" + GOOD_RULE.replace("t-1", "t-2") + "---\n" + GOOD_RULE,
        "huge-int": GOOD_RULE.replace("events:", "tolerance: {lines: 99999999999999999999999}\nevents:"),
        "huge-duration": GOOD_RULE + "lifetime: {quiet: 99999999999999999h}\n",
    }
    for name, text in cases.items():
        p = c.work.file("hostile-%s.yaml" % name, text)
        r = tl.run("check", p, timeout=120)
        check(r.returncode == 1, "check %s: exit %d\n%s" % (name, r.returncode, (r.stdout + r.stderr)[-500:]))
        check(any(l.startswith(p + ":") for l in r.stderr.splitlines()), "check %s: no file:line:col" % name)
    dup = c.work.file("dup-ids.yaml", GOOD_RULE)
    dup2 = c.work.file("dup-ids-2.yaml", GOOD_RULE)
    r = tl.run("check", dup, dup2)
    check(r.returncode == 1 and "t-1" in r.stderr, "duplicate ids accepted: %s" % r.stderr[-300:])
    return "%d hostile files rejected with positions" % (len(cases) + 1)


def exp_1e(c):
    """A key repeated in one rule mapping is an error naming both positions (it used to keep the first silently)."""
    p = c.work.file("dup-key.yaml", GOOD_RULE + "severity: critical\n")
    r = tl.run("check", p)
    check(r.returncode == 1, "check: exit %d" % r.returncode)
    check("severity" in r.stderr and p + ":7:" in r.stderr, "message: %s" % r.stderr[-300:])
    return "rejected at %s" % r.stderr.strip().splitlines()[0].replace(c.work.path + "/", "")[:80]


def exp_1f(c):
    """A 200 MB rule file is refused before it is read: fast, no memory."""
    p = os.path.join(c.work.path, "huge.yaml")
    with open(p, "w") as f:
        f.write('id: t-1\ntitle: "')
        f.truncate(200 << 20)
    t0 = time.monotonic()
    rc, out, rss = run_child_rss(["check", p], timeout=60)
    took = time.monotonic() - t0
    check(rc == 1 and p + ":1:1" in out, "check: exit %s %s" % (rc, out[-300:]))
    check(took < 30 and rss < 128, "%.1f s, %.0f MB" % (took, rss))
    return "refused at file:1:1 in %.2f s, peak RSS %.0f MB" % (took, rss)


def exp_1g(c):
    """Patterns the engines refuse (back-reference, look-ahead, huge repeats, empty, unbalanced, a 1 MB literal, a
    200,000-way alternation): rejected naming rule and event; the message is a bounded excerpt."""
    alts = "|".join("w%d" % i for i in range(c.size(20000, 200000)))
    bad = [r"(a)\1", r"a(?=b)", r"(a{1000}){1000}", r"[a-z]{0,60000}q", "", "(unbalanced", "x" * (1 << 20), alts]
    longest = 0
    for i, rx in enumerate(bad):
        p = c.work.file("rx-%d.yaml" % i, "id: rx-%d\ntitle: t\nseverity: warning\nevents:\n  e:\n    regex: '%s'\n"
                        % (i, rx.replace("'", "''")))
        r = tl.run("check", p, timeout=300)
        said = r.stdout + r.stderr
        longest = max(longest, len(said))
        if rx in ("a*",):
            continue
        check(r.returncode == 1 or (i == len(bad) - 1 and r.returncode == 0),
              "pattern %d: exit %d %s" % (i, r.returncode, said[-300:]))
        if r.returncode == 1:
            check("rx-%d" % i in said and "e" in said, "pattern %d: rule/event not named" % i)
    check(longest < 20000, "a message of %d bytes" % longest)
    return "%d patterns; longest message %d bytes" % (len(bad), longest)


def exp_1h(c):
    """Many rules: N one-event rules compile (`check`) and `scan` raises the right incident."""
    n = c.size(1000, 5000)
    d = os.path.join(c.work.path, "many-rules")
    os.makedirs(d)
    with open(os.path.join(d, "all.yaml"), "w") as f:
        for i in range(n):
            f.write("---\nid: many-%d\ntitle: \"many %d\"\nseverity: warning\nevents:\n  e:\n    regex: 'marker-%d-x'\n"
                    % (i, i, i))
    t0 = time.monotonic()
    rc, out, rss = run_child_rss(["check", d], timeout=600)
    took = time.monotonic() - t0
    check(rc == 0, "check %d rules: exit %s %s" % (n, rc, out[-300:]))
    log = c.work.file("many.log", "2026-11-30T00:00:00Z hello marker-%d-x\n" % (n - 7))
    rc, incidents, _ = tl.scan_incidents("--rules", d, log, timeout=600)
    check([i["rule"] for i in incidents] == ["many-%d" % (n - 7)], "scan: %s" % [i["rule"] for i in incidents])
    return "%d rules: check %.1f s, %.0f MB; scan finds the one" % (n, took, rss)


# ---- 2: mutation fuzzing through the command line ------------------------------------------------------------------

def exp_2(c):
    """Mutated rule files and logs (bytes, tokens, splices of the shipped rules and real logs) through `check` and
    `scan`: only exit 0/1/2, no crash, no hang."""
    src = tl.SOURCE_DIR
    seeds = []
    for root, _, names in os.walk(os.path.join(src, "rules")):
        seeds += [os.path.join(root, n) for n in names if n.endswith(".yaml")]
    logs = [os.path.join(src, "tests/corpus/real", n) for n in os.listdir(os.path.join(src, "tests/corpus/real"))
            if n.endswith(".log")]
    rnd = random.Random(int(os.environ.get("CAMPAIGN_SEED", "12345")))
    deadline = time.monotonic() + c.size(30, 240)
    runs = crashes = 0
    while time.monotonic() < deadline:
        is_rule = rnd.random() < 0.4
        with open(rnd.choice(seeds if is_rule else logs), "rb") as f:
            data = bytearray(f.read()[:1 << 16])
        for _ in range(rnd.randint(1, 20)):
            op = rnd.randint(0, 3)
            pos = rnd.randrange(len(data) + 1)
            if op == 0 and data:
                data[min(pos, len(data) - 1)] = rnd.randrange(256)
            elif op == 1:
                data[pos:pos] = rnd.choice([b"\n", b"\0", b": ", b"- ", b"'", b'"', b"{", b"[", b"&a ", b"*a", b"\xff"])
            elif op == 2:
                del data[pos:pos + rnd.randint(1, 64)]
            else:
                data[pos:pos] = data[rnd.randrange(len(data) + 1):][:rnd.randint(1, 256)]
        p = os.path.join(c.work.path, "mut.yaml" if is_rule else "mut.log")
        with open(p, "wb") as f:
            f.write(bytes(data))
        args = ["check", p] if is_rule else ["scan", "--format", rnd.choice(["auto", "raw", "cri", "docker"]), p]
        rc, out, _ = run_child_rss(args, timeout=60)
        runs += 1
        if rc not in (0, 1, 2):
            crashes += 1
            keep = os.path.join(c.work.path, "crash-%d" % crashes)
            os.rename(p, keep)
            print("  %s: exit %s (kept %s)\n%s" % (" ".join(args), rc, keep, out[-1000:]))
    check(crashes == 0, "%d of %d runs crashed or hung" % (crashes, runs))
    return "%d executions, 0 crashes, 0 hangs" % runs


# ---- 3: the daemon under faults --------------------------------------------------------------------------------------

def exp_3e(c):
    """A read-only state dir: a clear error and exit 2, no half start."""
    ro = os.path.join(c.work.path, "ro-state")
    os.makedirs(ro)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", ro], capture_output=True).returncode != 0:
        raise tl.Skip("mount -t tmpfs is not permitted here")
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    try:
        d = tl.Daemon(c.work, ["--source", c.work.log_file], state=ro, name="ro")
        d.start(wait=False)
        rc = d.proc.wait(60)
        check(rc == 2, "exit %s" % rc)
        check("Read-only file system" in d.log_text() or "not writable" in d.log_text(), d.log_text(2000))
    finally:
        subprocess.run(["umount", ro], capture_output=True)
    return "exit 2: cannot write in the state dir (read-only file system)"


def exp_3f(c):
    """A SIGHUP storm while lines flow: alive, reloads coalesced, every line read."""
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow(c.work, name="hup")
    rss0 = d.memory()["VmRSS"]
    n = 0
    deadline = time.monotonic() + c.size(2, 2)
    while time.monotonic() < deadline:
        n += 1
        c.work.append("LINE %d" % n)
        d.send(signal.SIGHUP)
        time.sleep(0.02)
    lines = list(range(1, n + 1))
    d.wait_incidents(len(lines), timeout=60, what="all %d lines" % n)
    rss1 = d.memory()["VmRSS"]
    reloads = sum(1 for l in d.log_lines() if "rules reloaded" in l.get("msg", ""))
    d.settle()
    d.stop_ok()
    tl.assert_exactly_once(d.incidents(), lines)
    return "%d SIGHUP in 2 s: %d reloads, %d lines exactly once, RSS %.0f -> %.0f MB" % (
        n, reloads, n, rss0 / 2**20, rss1 / 2**20)


def exp_3g(c):
    """A symlink loop, a symlink to a directory, a file replaced by a FIFO: no hang, counted unreadable, the other
    files keep flowing."""
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    logs = c.work.logs
    os.symlink(os.path.join(logs, "b.log"), os.path.join(logs, "a.log"))
    os.symlink(os.path.join(logs, "a.log"), os.path.join(logs, "b.log"))
    os.symlink(".", os.path.join(logs, "x.log"))
    f = os.path.join(logs, "f.log")
    open(f, "w").close()
    d = tl.Daemon(c.work, ["--source", os.path.join(logs, "*.log")], name="links").start()
    os.unlink(f)
    os.mkfifo(f)
    c.work.append("LINE 1 still flowing")
    d.wait_incidents(1, timeout=30)
    unreadable = wait_until(lambda: d.metric("faultline_files_unreadable_total"), 30, what="unreadable counted")
    d.stop_ok()
    return "no hang; files_unreadable_total %d; app.log still read" % unreadable


def exp_4c(c):
    """A 100 MB body, a 1 MB header and a 100 KB URI: refused early; probes keep answering."""
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow(c.work, name="big")
    answers = []
    for what, head, body_len in (
            ("100 MB body", b"POST /api/v1/incidents HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (100 << 20), 100 << 20),
            ("1 MB header", b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n", 0),
            ("100 KB URI", b"GET /" + b"a" * (100 << 10) + b" HTTP/1.1\r\nHost: x\r\n\r\n", 0)):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        sent = 0
        try:
            s.sendall(head)
            chunk = b"z" * 65536
            while sent < body_len:
                s.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # closed on us: the point
        try:
            reply = s.recv(200)
        except OSError:
            reply = b""
        s.close()
        status = reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/") else "closed"
        check(status in ("400", "413", "414", "431", "closed"), "%s: %s" % (what, reply[:100]))
        check(d.get("/healthz")[0] == 200, "/healthz after the %s" % what)
        answers.append("%s: %s after %.1f MB" % (what, status, (len(head) + sent) / 2**20))
    d.stop_ok()
    return "; ".join(answers)


def exp_4d(c):
    """Traversal, odd methods and malformed HTTP: 404/405/400 or closed, nothing served from outside, no smuggled
    answer; 100 pipelined requests get 100 answers."""
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow(c.work, name="http")

    def raw(req, timeout=5):
        s = socket.create_connection(("127.0.0.1", d.port), timeout=timeout)
        s.sendall(req)
        data = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
        except OSError:
            pass
        s.close()
        return data

    for path in ("/../../etc/passwd", "/api/v1/incidents/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/api/v1/incidents/..%2f..%2fetc",
                 "http://evil/etc/passwd"):
        out = raw(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check(b"root:" not in out, "%s served /etc/passwd" % path)
        check(out[:12] in (b"HTTP/1.1 404", b"HTTP/1.1 400") or not out, "%s: %s" % (path, out[:60]))
    for method in (b"FOO", b"DELETE", b"TRACE", b"OPTIONS", b"CONNECT"):
        out = raw(method + b" /api/v1/incidents HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        check(not out or out[9:12] in (b"405", b"400", b"404"), "%s: %s" % (method, out[:60]))
    for bad in (b"GET /\r\n\r\n", b"\x16\x03\x01garbage\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                b"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
                b"POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n",
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        out = raw(bad)
        check(out.count(b"HTTP/1.1 ") <= 1, "smuggled answer to %r: %s" % (bad[:40], out[:200]))
    pipelined = raw(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 99 +
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", timeout=20)
    answers = pipelined.count(b"HTTP/1.1 200")
    check(answers == 100, "%d answers to 100 pipelined requests" % answers)
    check(d.get("/healthz")[0] == 200, "/healthz")
    d.stop_ok()
    return "no traversal, no smuggling; 100/100 pipelined answers"


def exp_4e(c):
    """Hostile incident content (script tags, quotes, NUL, ESC, invalid UTF-8, in a file named like markup): the API
    JSON stays valid, the page escapes everything."""
    import json as _json
    name = os.path.join(c.work.logs, "<img src=x onerror=alert(3)>.log")
    open(name, "w").close()
    d = tl.Daemon(c.work, ["--source", os.path.join(c.work.logs, "*.log")], rules=os.path.join(tl.SOURCE_DIR, "rules"),
                  name="hostile").start()
    with open(name, "ab") as f:
        f.write(b"2026-11-30T00:00:00Z " + OOM.encode() + b' <script>alert(1)</script>"} ,{"x":"</pre><img onerror=x>'
                b"\0\x1b[31m\xff\xfe\n")
    wait_until(lambda: d.incidents(), 30, what="the incident", alive=d)
    status, _, body = d.get("/api/v1/incidents")
    _json.loads(body)
    status, _, page = d.get("/")
    check(status == 200, "page: %s" % status)
    check(b"<script>alert" not in page and b"<img src=x" not in page and b"<img onerror" not in page, "raw markup on the page")
    nul = page.count(b"\0")
    check(nul == 0, "%d NUL bytes on the page" % nul)
    d.stop_ok()
    return "API JSON valid; page: 0 raw <script>/<img>, 0 NUL"


def exp_6b(c):
    """Secrets (bearer token file, HMAC secret, API token, ?token= in a sink URL, X-Api-Key) at debug level: found in
    none of stderr, stdout, /metrics, /readyz, /api, the state dir."""
    secrets = ["tok-%016x" % random.getrandbits(64) for _ in range(5)]
    rx = tl.Receiver(work=c.work).start()
    bearer = c.work.file("bearer", secrets[0] + "\n")
    hmac_file = c.work.file("hmac", "whsec_" + __import__("base64").b64encode(secrets[1].encode()).decode() + "\n")
    api = c.work.file("api-token", secrets[2] + "\n")
    config = tl.sinks_yaml([{"name": "rx", "url": rx.url("/hook?token=" + secrets[3]), "format": "json",
                             "bearer_token_file": bearer, "hmac_secret_file": hmac_file,
                             "headers": {"X-Api-Key": secrets[4]}}]) + "server:\n  api_token_file: %s\n" % api
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow(c.work, config=config, log_level="debug", name="secrets")
    c.work.append("LINE 1")
    wait_until(lambda: rx.received(), 30, what="the webhook")
    seen = [d.get(p, headers={"Authorization": "Bearer " + secrets[2]})[2] for p in
            ("/metrics", "/readyz", "/api/v1/incidents", "/api/v1/rules")]
    d.stop_ok()
    for root, _, names in os.walk(c.work.state):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                seen.append(f.read())
    seen.append(d.log_text(1 << 30).encode())
    seen.append(open(d.output, "rb").read())
    hits = sum(blob.count(s.encode()) for blob in seen for s in secrets)
    check(hits == 0, "%d secrets found" % hits)
    return "0 of 5 secrets in logs, metrics, API, state, output"


def exp_6c(c):
    """A sink URL with user:password@: the config error does not print the password."""
    cfg = c.work.file("creds.yaml", "sinks:\n  - name: s\n    url: 'http://alice:hunter2secret@127.0.0.1:1/x'\n"
                      "    format: nosuchformat\n")
    r = tl.run("run", "--config", cfg, "--check-config", timeout=30)
    check(r.returncode != 0, "a bad sink accepted")
    check("hunter2secret" not in r.stdout + r.stderr, "password printed: %s" % (r.stdout + r.stderr)[-300:])
    return "error without the password (exit %d)" % r.returncode


def exp_6e(c):
    """No --listen: the default binds 127.0.0.1 only; with an API token, /api answers 401 without it, and the page at /
    (its files hold no data: it shows the login form) carries no incident."""
    c.work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    token = c.work.file("api-token", "s3cret-token\n")
    d = tl.follow(c.work, config="server:\n  api_token_file: %s\n" % token, name="auth")
    status, _, body = d.get("/")
    check(status == 200 and b"every-line" not in body, "/ without token: %s" % status)
    for path in ("/api/v1/incidents", "/api/v1/status", "/api/v1/fingerprints"):
        check(d.get(path)[0] == 401, "%s without token" % path)
        check(d.get(path, headers={"Authorization": "Bearer wrong"})[0] == 401, "%s with a wrong token" % path)
        check(d.get(path, headers={"Authorization": "Bearer s3cret-token"})[0] == 200, "%s with the token" % path)
    check(d.get("/metrics")[0] == 200, "/metrics open")
    d.stop_ok()
    r = tl.run("run", "--help")
    check("127.0.0.1:9464" in r.stdout + r.stderr, "the default listen address is not 127.0.0.1:9464")
    return "default 127.0.0.1:9464; /api 401 without the token, / the login page only, /metrics open"


# ---- the experiments that are test scripts --------------------------------------------------------------------------
