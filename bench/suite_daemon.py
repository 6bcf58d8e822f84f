"""bench suite, the sections that run the daemon: follow (lines/s with nothing lost), latency (a failure line to its
webhook), memory (RSS over a soak) and idle CPU. Each measures one figure family and returns its raw numbers."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


from suite_common import *  # noqa: F401,F403
from suite_common import tl, peers  # noqa: F401

# ------------------------------------------------------------------------------------------------ sections


def write_all(fd: int, data: memoryview) -> None:
    while data:
        n = os.write(fd, data)
        data = data[n:]


def section_follow(ctx: dict) -> dict:
    b, runs, src = ctx["bin"], ctx["runs"], ctx["follow_corpus"]
    rs = ctx["rules"]["catalog"]
    expect = fl_counts(b, rs["dir"], src)
    size = os.path.getsize(src)
    rounds = []
    for i in range(runs):
        log("follow: run %d/%d (%d lines, %.0f MB)" % (i + 1, runs, expect["lines"], size / 1e6))
        settle_disk()
        wait_quiet(ctx["max_wait"])
        work = tempfile.mkdtemp(prefix="follow-", dir=ctx["tmp"])
        target = os.path.join(work, "serving.log")
        open(target, "w").close()
        d = Daemon(b["faultline"], work, [target], rs["dir"], state=os.path.join(ctx["tmp"], "follow-state-%d" % i))
        try:
            d.wait_ready(60)
            cpu0 = d.cpu_seconds()
            b0, _ = cpu_jiffies()
            read0 = read_chars(d.pid)
            fd = os.open(target, os.O_WRONLY | os.O_APPEND)
            t0 = time.monotonic()
            with open(src, "rb") as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    write_all(fd, memoryview(chunk))
            t_written = time.monotonic()
            os.close(fd)
            # Done when the daemon has read every byte written (/proc/PID/io): each read is scanned and correlated
            # before the next one. The metrics publish their counts once a second, so a wait on them ends on a tick;
            # they are checked afterwards.
            ok, t1 = wait_read(d, read0 + size, timeout=600)
            cpu1 = d.cpu_seconds()
            b1, _ = cpu_jiffies()
            ok2, _, m = wait_metric(d, "faultline_bytes_read_total", size, timeout=10, poll=0.1)
            ok3, _, m = wait_metric(d, "faultline_lines_read_total", expect["records"], timeout=10, poll=0.1)
            ok = ok and ok2 and ok3
            elapsed = t1 - t0
            r = {"ok": ok, "seconds": elapsed, "write_seconds": t_written - t0,
                 "lines_written": expect["lines"], "records_expected": expect["records"],
                 "lines_read": m.get("faultline_lines_read_total", 0), "bytes_read": m.get("faultline_bytes_read_total", 0),
                 "bytes_written": size, "shed": m.get("faultline_lines_shed_total", 0),
                 "truncated": m.get("faultline_lines_truncated_total", 0),
                 "lag": m.get("faultline_source_lag_bytes", 0), "daemon_cpu": cpu1 - cpu0,
                 "lines_per_s": expect["lines"] / elapsed, "records_per_s": expect["records"] / elapsed,
                 "machine_cores_busy": ((b1 - b0) / HZ) / max(elapsed, 1e-9)}
            r["lost"] = not (ok and r["lines_read"] == expect["records"] and r["bytes_read"] == size and r["shed"] == 0)
            rounds.append(r)
        finally:
            d.stop(timeout=20, strict=False)
            shutil.rmtree(work, ignore_errors=True)
    return {"rounds": rounds, "bytes": size}


def fsync_cost(d: str, n: int = 30) -> tuple[float, float]:
    """Median ms of (write 2 KB + fsync a new file, rename + fsync its directory) in `d`: what a spool write costs."""
    tf, td = [], []
    for i in range(n):
        p = os.path.join(d, "fsync-%d.tmp" % i)
        t0 = time.perf_counter()
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"x" * 2048)
        os.fsync(fd)
        os.close(fd)
        t1 = time.perf_counter()
        os.rename(p, p[:-4])
        dfd = os.open(d, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        t2 = time.perf_counter()
        os.remove(p[:-4])
        tf.append(1000 * (t1 - t0))
        td.append(1000 * (t2 - t1))
    return med(tf), med(td)


def section_latency(ctx: dict) -> dict:
    """The state dir (spool) on the bench disk -- the figure -- and, to show what the spool's fsyncs cost, on tmpfs."""
    res = {"disk": latency_run(ctx, None)}
    if ctx.get("smoke"):
        return res
    if os.path.isdir("/dev/shm"):
        shm = tempfile.mkdtemp(prefix="faultline-bench-", dir="/dev/shm")
        try:
            res["tmpfs"] = latency_run(ctx, shm)
        finally:
            shutil.rmtree(shm, ignore_errors=True)
    # The periodic checkpoint (default every 5 s) runs on the pipeline thread: a variant without it shows its share.
    cfg = os.path.join(ctx["tmp"], "no-checkpoint.yaml")
    with open(cfg, "w") as f:
        f.write("checkpoint_interval: 1h\n")
    ctx2 = dict(ctx, latency_extra=ctx.get("latency_extra", []) + ["--config", cfg])
    res["no_checkpoint"] = latency_run(ctx2, None)
    res["receiver_overhead_ms"] = list(__import__("webhook_receiver").calibrate(100))
    return res


def settle_disk() -> None:
    """Flushes dirty pages (earlier sections wrote GBs) so that their writeback does not slow this section's fsyncs."""
    t0 = time.monotonic()
    os.sync()
    log("sync: %.1f s" % (time.monotonic() - t0))


def latency_run(ctx: dict, state_parent: str | None) -> dict:
    b = ctx["bin"]
    settle_disk()
    rules = ctx["probe_rules"]
    rate, duration, probes_per_s = ctx["rate"], ctx["latency_seconds"], ctx["probes_per_s"]
    work = tempfile.mkdtemp(prefix="latency-", dir=ctx["tmp"])
    portfile, arrivals = os.path.join(work, "port"), os.path.join(work, "arrivals.tsv")
    recv = subprocess.Popen([sys.executable, os.path.join(HERE, "webhook_receiver.py"), portfile, arrivals])
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(portfile) and time.monotonic() < deadline:
            time.sleep(0.01)
        with open(portfile) as f:
            rport = int(f.read())
        target = os.path.join(work, "serving.log")
        open(target, "w").close()
        d = Daemon(b["faultline"], work, [target], rules,
                   extra=["--webhook", "http://127.0.0.1:%d/hook" % rport] + ctx.get("latency_extra", []),
                   state=os.path.join(state_parent or work, "state"))
        filler = []
        with open(ctx["peer_corpus"], "rb") as f:
            for line in f:
                if b"Traceback" not in line and b"Error" not in line:  # healthy traffic only: probes are the failures
                    filler.append(line)
                if len(filler) >= 200000:
                    break
        try:
            d.wait_ready(60)
            wait_quiet(ctx["max_wait"])
            log("latency: %d s at %d lines/s, %d probe(s)/s" % (duration, rate, probes_per_s))
            fd = os.open(target, os.O_WRONLY | os.O_APPEND)
            tick = 0.001
            per_tick = rate * tick
            probe_every = 1.0 / probes_per_s
            sent: dict[str, int] = {}
            start = time.monotonic()
            next_probe = start + 0.5
            lines_due = 0.0
            li = 0
            written = 0
            cpu0 = d.cpu_seconds()
            while True:
                now = time.monotonic()
                if now - start >= duration:
                    break
                lines_due += per_tick
                k = int(lines_due)
                lines_due -= k
                if k:
                    chunk = b"".join(filler[(li + j) % len(filler)] for j in range(k))
                    li += k
                    write_all(fd, memoryview(chunk))
                    written += k
                if now >= next_probe:
                    pid = str(len(sent) + 1)
                    line = ("(EngineCore_DP0 pid=88) ERROR 11-29 10:08:01 [core.py:1] FAULTLINE-BENCH-PROBE id=%s "
                            "RuntimeError: synthetic failure\n" % pid).encode()
                    write_all(fd, memoryview(line))
                    sent[pid] = time.monotonic_ns()
                    written += 1
                    next_probe += probe_every
                nxt = start + (int((now - start) / tick) + 1) * tick
                delay = nxt - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            elapsed = time.monotonic() - start
            os.close(fd)
            cpu1 = d.cpu_seconds()
            time.sleep(2.0)
            got: dict[str, int] = {}
            with open(arrivals) as f:
                for line in f:
                    t, probe, rule, _ = line.rstrip("\n").split("\t")
                    if rule == "bench-latency-probe" and probe not in got:
                        got[probe] = int(t)
            lat = [(got[p] - sent[p]) / 1e6 for p in sent if p in got]
            exposition = d.metrics()
            m = exposition.totals()
            buckets = {labels["le"]: v for name, labels, v in exposition.samples
                       if name == "faultline_incident_latency_seconds_bucket" and set(labels) == {"le"}}
            ff, fd_ = fsync_cost(d.state)
            res = {"internal_buckets": buckets, "fsync_note": "%.1f ms and %.1f ms (median)" % (ff, fd_),
                   "internal_mean_ms": 1000 * m.get("faultline_incident_latency_seconds_sum", 0) /
                   max(m.get("faultline_incident_latency_seconds_count", 0), 1),
                   "sent": len(sent), "received": len(lat), "lines_written": written, "seconds": elapsed,
                   "achieved_rate": written / elapsed, "p50_ms": pct(lat, 50), "p90_ms": pct(lat, 90),
                   "p99_ms": pct(lat, 99), "max_ms": max(lat) if lat else float("nan"),
                   "min_ms": min(lat) if lat else float("nan"), "daemon_cpu_share": (cpu1 - cpu0) / elapsed,
                   "lines_read": m.get("faultline_lines_read_total", 0), "latencies_ms": lat,
                   "deliveries_ok": m.get("faultline_webhook_deliveries_total", 0)}
        finally:
            d.stop(timeout=20, strict=False)
    finally:
        recv.terminate()
        recv.wait()
    shutil.rmtree(work, ignore_errors=True)
    return res


def section_memory(ctx: dict) -> dict:
    """Full catalog, 100 followed files: RSS over a soak; then (same daemon) CPU while idle."""
    b = ctx["bin"]
    rs = ctx["rules"]["catalog"]
    nfiles, soak, rate = ctx["files"], ctx["soak"], ctx["soak_rate"]
    work = tempfile.mkdtemp(prefix="memory-", dir=ctx["tmp"])
    logs = os.path.join(work, "logs")
    os.makedirs(logs)
    paths = [os.path.join(logs, "pod-%03d.log" % i) for i in range(nfiles)]
    for p in paths:
        open(p, "w").close()
    with open(ctx["peer_corpus"], "rb") as f:
        filler = f.readlines()[:100000]
    settle_disk()
    d = Daemon(b["faultline"], work, [os.path.join(logs, "*.log")], rs["dir"])
    res: dict = {"files": nfiles, "soak_seconds": soak, "rate": rate}
    try:
        d.wait_ready(60)
        fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
        log("memory: %d files, %d lines/s for %d s" % (nfiles, rate, soak))
        samples = []
        start = time.monotonic()
        tick = 0.01
        due = 0.0
        li = 0
        written = 0
        next_sample = start
        cpu0 = d.cpu_seconds()
        while time.monotonic() - start < soak:
            due += rate * tick
            k = int(due)
            due -= k
            for j in range(k):
                write_all(fds[(li + j) % nfiles], memoryview(filler[(li + j) % len(filler)]))
            li += k
            written += k
            now = time.monotonic()
            if now >= next_sample:
                mem = d.memory()
                samples.append((now - start, mem.get("VmRSS", 0), mem.get("VmHWM", 0)))
                next_sample += ctx["sample_every"]
            delay = start + (int((now - start) / tick) + 1) * tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        for fd in fds:
            os.close(fd)
        cpu1 = d.cpu_seconds()
        ok, _, m = wait_metric(d, "faultline_lines_read_total", 1, timeout=5)
        mem = d.memory()
        samples.append((time.monotonic() - start, mem.get("VmRSS", 0), mem.get("VmHWM", 0)))
        warm = min(max(30.0, soak * 0.1), soak / 2)
        window = min(max(60.0, soak * 0.1), soak / 4)
        steady = [s for s in samples if s[0] >= warm]
        first = [s[1] for s in steady if s[0] < warm + window]
        last = [s[1] for s in steady if s[0] >= soak - window]
        res.update({"samples": samples, "written": written, "warm": warm, "window": window, "lines_read": m.get("faultline_lines_read_total", 0),
                    "rss_steady_median": med([s[1] for s in steady]) if steady else None,
                    "rss_max": max(s[1] for s in samples), "hwm": mem.get("VmHWM", 0),
                    "rss_first": med(first) if first else None, "rss_last": med(last) if last else None,
                    "soak_cpu_share": (cpu1 - cpu0) / soak})
        if first and last:
            res["growth"] = res["rss_last"] - res["rss_first"]
        # Idle: no new lines; let partial-line and checkpoint timers settle, then measure.
        if "idle" in ctx["sections"]:
            time.sleep(5)
            log("idle: %d s with %d files followed, nothing appended" % (ctx["idle"], nfiles))
            c0, t0 = d.cpu_seconds(), time.monotonic()
            time.sleep(ctx["idle"])
            c1, t1 = d.cpu_seconds(), time.monotonic()
            res["idle"] = {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "share": (c1 - c0) / (t1 - t0),
                           "files": nfiles, "tick_s": 1.0 / HZ}
    finally:
        d.stop(timeout=20, strict=False)
        shutil.rmtree(work, ignore_errors=True)
    if "idle" in ctx["sections"] and not ctx.get("smoke"):
        res["idle_variants"] = idle_variants(ctx, filler)
    return res


def idle_variants(ctx: dict, filler: list) -> dict:
    """Idle CPU of fresh daemons after the same burst (100 files, 100k lines): default tail settings vs
    `tail.rescan_interval: 10s`, to show how much of the idle cost is the periodic rescan."""
    b = ctx["bin"]
    rs = ctx["rules"]["catalog"]
    out = {}
    for name, cfg_text in (("default", None), ("rescan_10s", "tail:\n  rescan_interval: 10s\n")):
        work = tempfile.mkdtemp(prefix="idle-", dir=ctx["tmp"])
        logs = os.path.join(work, "logs")
        os.makedirs(logs)
        paths = [os.path.join(logs, "pod-%03d.log" % i) for i in range(ctx["files"])]
        for p in paths:
            open(p, "w").close()
        extra = []
        if cfg_text:
            cfg = os.path.join(work, "config.yaml")
            with open(cfg, "w") as f:
                f.write(cfg_text)
            extra = ["--config", cfg]
        d = Daemon(b["faultline"], work, [os.path.join(logs, "*.log")], rs["dir"], extra=extra)
        try:
            d.wait_ready(60)
            fds = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
            for j, line in enumerate(filler[:100000]):
                write_all(fds[j % len(fds)], memoryview(line))
            for fd in fds:
                os.close(fd)
            time.sleep(5)
            window = min(ctx["idle"], 30)
            log("idle variant %s: %d s" % (name, window))
            c0, t0 = d.cpu_seconds(), time.monotonic()
            time.sleep(window)
            c1, t1 = d.cpu_seconds(), time.monotonic()
            out[name] = {"seconds": t1 - t0, "cpu_seconds": c1 - c0, "share": (c1 - c0) / (t1 - t0)}
        finally:
            d.stop(timeout=20, strict=False)
            shutil.rmtree(work, ignore_errors=True)
    return out
