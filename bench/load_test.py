#!/usr/bin/env python3
"""Sustained load: a writer appends `--rate` lines/s round-robin over `--files` files for `--seconds`, while
`faultline run` follows them. Afterwards every line must have been read (the daemon's lines-read counter equals the
lines written), the daemon's incident revisions must equal `faultline scan --json` over the final files, and RSS must
stay flat.

  bench/load_test.py                                  # 50k lines/s, 200 files, 5 minutes (the documented figure)
  bench/load_test.py --rate 20000 --seconds 30        # a shorter run
  bench/load_test.py --write-results                  # also replace the "Load" section of bench/RESULTS.md

Failure lines (a CUDA out-of-memory error, one in `--failure-every` per file) make incidents, so the comparison is
not of empty sets. The writer batches its appends (one write per file per 20 ms tick) so that it, not the machine's
Python, sets the rate; it reports the rate it reached. Exit status 0 when every check holds, 1 otherwise.
Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import faultline_testlib as tl  # noqa: E402
from suite_common import revisions, verdict, write_figures  # noqa: E402

BEGIN, END = "<!-- BEGIN load-test -->", "<!-- END load-test -->"
OOM = ("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.19 GiB of which 1.02 GiB is free.")


def stamp(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Writer:
    """Appends lines to N files at a target rate; line k of file f is benign unless k % failure_every == 7."""

    def __init__(self, directory: str, files: int, failure_every: int):
        self.fds = [os.open(os.path.join(directory, "pod-%03d.log" % i), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                    for i in range(files)]
        self.counts = [0] * files
        self.failure_every = failure_every
        self.written = 0
        self.next_file = 0

    def line(self, f: int, now: float) -> str:
        k = self.counts[f]
        self.counts[f] += 1
        if k % self.failure_every == 7:
            return "%s %s\n" % (stamp(now), OOM)
        return ("%s INFO 200 POST /v1/completions request_id=cmpl-%d-%d prompt_tokens=%d generation_tokens=%d "
                "throughput=%.1f tokens/s\n" % (stamp(now), f, k, 100 + k % 900, 1 + k % 250, 1000.0 + k % 97))

    def write(self, n: int, now: float) -> None:
        batches = {}
        for _ in range(n):
            f = self.next_file
            self.next_file = (f + 1) % len(self.fds)
            batches.setdefault(f, []).append(self.line(f, now))
        for f, lines in batches.items():
            data = "".join(lines).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(self.fds[f], view):]
        self.written += n

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=int, default=50_000, help="lines per second (default 50k)")
    ap.add_argument("--files", type=int, default=200, help="files written round-robin (default 200)")
    ap.add_argument("--seconds", type=float, default=300, help="how long the writer runs (default 300)")
    ap.add_argument("--failure-every", type=int, default=2000, help="one failure line per this many lines per file")
    ap.add_argument("--write-results", action="store_true", help="replace the Load section of bench/RESULTS.md")
    args = ap.parse_args()

    work = tl.Workdir("load")
    try:
        logs = os.path.join(work.path, "logs")
        os.makedirs(logs, exist_ok=True)
        writer = Writer(logs, args.files, args.failure_every)
        daemon = tl.Daemon(work, ["--source", os.path.join(logs, "*.log"), "--start-at", "beginning"],
                           rules=os.path.join(TOP, "rules"))
        daemon.start(timeout=120)
        t0 = time.monotonic()
        rss, cpu0 = [], daemon.cpu_seconds()
        next_sample = t0
        tick = 0.02
        while True:
            now = time.monotonic()
            elapsed = now - t0
            if elapsed >= args.seconds:
                break
            due = int(min(elapsed, args.seconds) * args.rate) - writer.written
            if due > 0:
                writer.write(due, time.time())
            if now >= next_sample:
                rss.append((elapsed, daemon.memory().get("VmRSS", 0)))
                next_sample += 5
            time.sleep(max(0.0, tick - (time.monotonic() - now)))
        write_seconds = time.monotonic() - t0
        writer.close()
        achieved = writer.written / write_seconds

        def read_all():
            v = daemon.metric("faultline_lines_read_total")
            return v is not None and v >= writer.written
        caught_up = True
        try:
            tl.wait_until(read_all, timeout=max(120.0, args.seconds), interval=0.2, what="every written line read")
        except tl.Failure:
            caught_up = False
        drain_seconds = time.monotonic() - t0 - write_seconds
        lines_read = int(daemon.metric("faultline_lines_read_total") or 0)
        cpu = daemon.cpu_seconds() - cpu0
        rss.append((time.monotonic() - t0, daemon.memory().get("VmRSS", 0)))
        daemon.stop()
        ran = revisions(daemon.incidents())

        files = sorted(os.path.join(logs, f) for f in os.listdir(logs))
        scan = subprocess.run([tl.binary(), "scan", "--rules", os.path.join(TOP, "rules"), "--json"] + files,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        scanned = revisions(json.loads(l) for l in scan.stdout.splitlines() if l.strip())

        steady = [r for t, r in rss if t >= min(30.0, args.seconds / 3)] or [r for _, r in rss]
        growth = (steady[-1] - steady[0]) / 2**20 if steady else 0.0
        figures = {
            "target_rate": args.rate, "achieved_rate": round(achieved), "files": args.files,
            "seconds": round(write_seconds, 1), "lines_written": writer.written, "lines_read": lines_read,
            "caught_up": caught_up, "drain_seconds": round(drain_seconds, 1),
            "revisions_run": len(ran), "revisions_scan": len(scanned),
            "missing": len(scanned - ran), "extra": len(ran - scanned),
            "rss_mib_start": round(steady[0] / 2**20, 1) if steady else None,
            "rss_mib_end": round(steady[-1] / 2**20, 1) if steady else None,
            "rss_mib_max": round(max(r for _, r in rss) / 2**20, 1) if rss else None,
            "rss_growth_mib": round(growth, 2),
            "cpu_percent_of_one_core": round(100.0 * cpu / (write_seconds + drain_seconds), 1),
        }
        ok = (caught_up and lines_read == writer.written and not figures["missing"] and not figures["extra"]
              and figures["revisions_run"] > 0)
        return verdict("load test", figures, ok, write_results if args.write_results else None)
    finally:
        tl.kill_all()
        work.cleanup()


def write_results(f: dict, ok: bool) -> None:
    write_figures(
        os.path.join(HERE, "RESULTS.md"), BEGIN, END, "Load (`bench/load_test.py`)",
        f"`faultline run` following {f['files']} files while a writer appends {f['target_rate']:,} lines/s for "
        f"{f['seconds']} s (reached {f['achieved_rate']:,} lines/s), one CUDA OOM line per 2,000 per file.",
        [("lines written / read", f"{f['lines_written']:,} / {f['lines_read']:,}"),
         ("caught up after the writer stopped", f"{'yes' if f['caught_up'] else 'NO'}, {f['drain_seconds']} s"),
         ("RSS steady start / end / max", f"{f['rss_mib_start']} / {f['rss_mib_end']} / {f['rss_mib_max']} MiB "
                                          f"(growth {f['rss_growth_mib']} MiB)"),
         ("daemon CPU", f"{f['cpu_percent_of_one_core']} % of one core")], ok, f)


if __name__ == "__main__":
    sys.exit(main())
