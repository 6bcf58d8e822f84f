#!/usr/bin/env python3
"""Catching up on a backlog: `faultline run` starts on `--files` files that already hold a corpus each (a daemon
restarted after downtime, a node's logs found at its first start) and reads them from the beginning as fast as it
can. This is where the daemon's one pipeline thread bounds its rate: the figures say how fast that is and how much of
it is that thread.

  bench/catch_up.py                       # 4 copies of corpus B (1M lines each), 3 runs
  bench/catch_up.py --files 8 --runs 5
  bench/catch_up.py --write-results       # also replace the "Catch-up" section of bench/RESULTS.md

Per run: a fresh state directory (the compiled rules copied from a first start, so no run compiles), the files in
the page cache. Seconds = from the daemon's start until it has read as many bytes as the files hold (/proc/PID/io
`rchar`, polled every 5 ms: the metrics publish their byte counts once a second; a read is decoded, matched and
correlated before the next one, and the rules and state it reads at start make this end up to ~2 MB early). CPU =
utime + stime of the whole daemon and of its pipeline thread (the main thread) over that time. The incidents of the
last run must equal `faultline scan --node-name --json` over the same files (rule, stream, first line, revision,
count), those of rules keyed by the node excepted when there are several files (see main). Exit status 0 when every
run read every byte and the incidents agree, 1 otherwise. Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import faultline_testlib as tl  # noqa: E402
from suite_common import corpus_of, machine_info, revisions, verdict, wait_read, write_figures  # noqa: E402

BEGIN, END = "<!-- BEGIN catch-up -->", "<!-- END catch-up -->"
NODE = "catch-up"  # the node the daemon's files, and so the scan's, are logs of


def one_run(work: tl.Workdir, logs: list[str], total: int, cache: str) -> dict:
    state = os.path.join(work.path, "state-%d" % time.monotonic_ns())
    os.makedirs(state)
    if os.path.isdir(cache):
        shutil.copytree(cache, os.path.join(state, "cache"))
    d = tl.Daemon(work, ["--start-at", "beginning", "--node-name", NODE] + [a for p in logs for a in ("--source", p)],
                  rules=os.path.join(TOP, "rules"), state=state, log_level="warn")
    d.start(wait=False)
    ok, t1 = wait_read(d, total, timeout=600)
    cpu, pipeline_cpu = d.cpu_seconds(), d.cpu_seconds(thread=d.pid)  # the pipeline thread is the main thread
    d.stop()
    return {"ok": ok, "seconds": t1 - d.started_at, "cpu": cpu, "pipeline_cpu": pipeline_cpu, "daemon": d}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=4, help="files, each a copy of the corpus (default 4)")
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines of corpus B per file (default 1M)")
    ap.add_argument("--runs", type=int, default=3, help="runs; the median is reported (default 3)")
    ap.add_argument("--write-results", action="store_true", help="replace the Catch-up section of bench/RESULTS.md")
    ap.add_argument("--bin", help="faultline binary (default: the suite's release build, else FAULTLINE_BIN or the "
                                  "tests' build)")
    args = ap.parse_args()
    release = os.path.join(HERE, "out", "build-rel", "faultline")
    if args.bin or (not os.environ.get("FAULTLINE_BIN") and os.access(release, os.X_OK)):
        os.environ["FAULTLINE_BIN"] = args.bin or release

    out = os.path.join(HERE, "out")
    os.makedirs(out, exist_ok=True)
    src = corpus_of(out, "B", args.lines)
    work = tl.Workdir("catch-up")
    try:
        logs = []
        for i in range(args.files):
            logs.append(os.path.join(work.logs, "pod-%03d.log" % i))
            shutil.copyfile(src, logs[-1])
        total = sum(os.path.getsize(p) for p in logs)
        with open(src, "rb") as f:
            lines = f.read().count(b"\n") * args.files
        # A first start compiles the rules into its state directory; each run starts from a copy of that cache.
        warm = tl.Daemon(work, ["--source", work.log_file], rules=os.path.join(TOP, "rules"),
                         state=os.path.join(work.path, "warm"), log_level="warn").start(timeout=120)
        warm.stop()
        cache = os.path.join(work.path, "warm", "cache")
        runs = [one_run(work, logs, total, cache) for _ in range(args.runs)]
        scan = subprocess.run([tl.binary(), "scan", "--rules", os.path.join(TOP, "rules"), "--node-name", NODE,
                               "--json"] + logs, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        # With several files, the incidents of rules keyed by the node see the files' lines in the order they were
        # read: the daemon's reads take turns among the files, a scan reads one file after the other. Those are
        # counted, not compared; the files' own incidents must be the same.
        node_keyed = "node=" + NODE
        ran_all = revisions(runs[-1]["daemon"].incidents())
        scanned_all = revisions(json.loads(l) for l in scan.stdout.splitlines() if l.strip())
        own = (lambda r: True) if args.files == 1 else (lambda r: r[1] != node_keyed)
        ran = {r for r in ran_all if own(r)}
        scanned = {r for r in scanned_all if own(r)}
        secs = statistics.median(r["seconds"] for r in runs)
        version = subprocess.run([tl.binary(), "version"], stdout=subprocess.PIPE, text=True).stdout.strip()
        machine = machine_info()
        figures = {
            "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "version": version,
            "machine": "%s, %d cores" % (machine["cpu"], machine["cores"]),
            "files": args.files, "lines": lines, "bytes": total, "runs": args.runs,
            "seconds": round(secs, 3),
            "seconds_min_max": [round(min(r["seconds"] for r in runs), 3), round(max(r["seconds"] for r in runs), 3)],
            "mb_per_s": round(total / secs / 1e6), "lines_per_s": round(lines / secs),
            "daemon_cpu_s": round(statistics.median(r["cpu"] for r in runs), 3),
            "pipeline_thread_cpu_s": round(statistics.median(r["pipeline_cpu"] for r in runs), 3),
            "pipeline_thread_busy": round(statistics.median(r["pipeline_cpu"] / r["seconds"] for r in runs), 2),
            "mb_per_cpu_s": round(total / statistics.median(r["cpu"] for r in runs) / 1e6),
            "all_read": all(r["ok"] for r in runs),
            "revisions_run": len(ran), "revisions_scan": len(scanned),
            "missing": len(scanned - ran), "extra": len(ran - scanned),
            "node_revisions_run": len(ran_all - ran), "node_revisions_scan": len(scanned_all - scanned),
        }
        ok = figures["all_read"] and not figures["missing"] and not figures["extra"] and figures["revisions_run"] > 0
        return verdict("catch-up", figures, ok, write_results if args.write_results else None)
    finally:
        tl.kill_all()
        work.cleanup()


def write_results(f: dict, ok: bool) -> None:
    lo, hi = f["seconds_min_max"]
    write_figures(
        os.path.join(HERE, "RESULTS.md"), BEGIN, END, "Catch-up (`bench/catch_up.py`)",
        f"`faultline run` started on {f['files']} files that already hold corpus B ({f['lines']:,} lines, "
        f"{f['bytes'] / 1e6:.0f} MB in all), read from the beginning; median of {f['runs']} runs. Measured "
        f"{f['when']} on {f['machine']}, {f['version']}.",
        [("every byte read after", f"{f['seconds']} s ({lo}–{hi})"),
         ("rate", f"{f['mb_per_s']} MB/s, {f['lines_per_s']:,} lines/s"),
         ("daemon CPU / of it the pipeline thread", f"{f['daemon_cpu_s']} s / {f['pipeline_thread_cpu_s']} s "
                                                    f"({f['mb_per_cpu_s']} MB per CPU-second)"),
         ("pipeline thread busy", f"{f['pipeline_thread_busy']:.0%} of the time"),
         ("of rules keyed by the node (not compared: read in another order)",
          f"{f['node_revisions_run']} / {f['node_revisions_scan']}")], ok, f)


if __name__ == "__main__":
    sys.exit(main())
