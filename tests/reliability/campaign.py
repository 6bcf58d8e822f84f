#!/usr/bin/env python3
"""The reliability campaign, rerun as a script: every experiment of the campaign (bad input, hostile rule files,
kills, full disk, clocks, many files, hostile clients, load, secrets) against the real binary, each ending in a row
`id | experiment | figure | PASS/FAIL`.

  tests/reliability/campaign.py              # every experiment (about 15-25 minutes on 2 cores)
  tests/reliability/campaign.py --quick      # the experiments of its own, smaller (ctest: reliability_quick)
  tests/reliability/campaign.py --only 1a,3h # some of them
  tests/reliability/campaign.py --markdown   # the table as Markdown (for docs/reliability.md)

Where an integration or end-to-end test already is the experiment (the kill -9 loops, the full disk, the clocks, the
10,000 files, the slow clients, redaction, signatures), the campaign runs that test script and reports its verdict:
the experiment is written once. With --quick those rows are left to ctest, which runs the same scripts. The rest are
written here. Exit status 0 when every experiment run passes, 1 otherwise. Python 3 standard library only.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from experiments import (exp_1a, exp_1b, exp_1c, exp_1d, exp_1e, exp_1f, exp_1g, exp_1h, exp_2, exp_3e,  # noqa: E402
                         exp_3f, exp_3g, exp_4c, exp_4d, exp_4e, exp_6b, exp_6c, exp_6e)

TESTS = os.path.dirname(HERE)


class Ctx:
    def __init__(self, work, quick):
        self.work, self.quick = work, quick
        self.size = (lambda quick_value, full_value: quick_value if quick else full_value)


def script(path, *args, timeout=900):
    def experiment(c):
        full = os.path.join(TESTS, path)
        if not os.path.exists(full):
            raise tl.Failure("%s is missing" % path)
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, full] + list(args), capture_output=True, text=True, timeout=timeout)
        took = time.monotonic() - t0
        last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        if p.returncode != 0:
            print(p.stdout[-4000:] + p.stderr[-2000:])
            raise tl.Failure("%s: %s" % (path, last[:200]))
        return "%s (%.0f s)" % (last[:120], took)
    experiment.script = path
    return experiment


def bench_load(c):
    p = subprocess.run([sys.executable, os.path.join(tl.SOURCE_DIR, "bench", "load_test.py"), "--rate", "20000",
                        "--seconds", "30"], capture_output=True, text=True, timeout=900)
    out = p.stdout.strip().splitlines()
    if p.returncode != 0:
        print(p.stdout[-4000:] + p.stderr[-2000:])
        raise tl.Failure("load test failed")
    return " ".join(out[-3:])[:200]


bench_load.script = "bench/load_test.py"

EXPERIMENTS = [
    ("1a", "scan on bad input", exp_1a),
    ("1b", "scan /dev/zero, scan - < /dev/zero", exp_1b),
    ("1c", "check/test on random bytes, NUL, empty dir", exp_1c),
    ("1d", "hostile rule YAML", exp_1d),
    ("1e", "duplicate key in a rule mapping", exp_1e),
    ("1f", "200 MB rule file", exp_1f),
    ("1g", "patterns the engines refuse", exp_1g),
    ("1h", "many rules", exp_1h),
    ("1i", "exit statuses and bounded messages", script("integration/test_exit_status.py")),
    ("2", "mutation fuzzing through the CLI", exp_2),
    ("3a", "kill -9 loop, output side", script("integration/test_kill9_restart.py")),
    ("3b", "kill -9 loop, webhook side", script("integration/test_kill9_delivery.py")),
    ("3c", "webhook receiver faults", script("e2e/test_webhook_outage.py")),
    ("3c'", "kill -9 with deliveries spooled", script("e2e/test_webhook_restart.py")),
    ("3d", "state dir on a 1 MiB tmpfs, filled", script("integration/test_full_disk.py")),
    ("3e", "read-only state dir", exp_3e),
    ("3f", "SIGHUP storm", exp_3f),
    ("3g", "symlink loop, directory symlink, FIFO", exp_3g),
    ("3h+3i", "far-future and backwards timestamps", script("integration/test_clock_bounds.py")),
    ("3j", "10,000 files, max_open_files 256", script("integration/test_many_files_fd_limit.py")),
    ("4a+4b", "slowloris and 10,000 idle connections", script("integration/test_slow_clients.py")),
    ("4c", "huge body, header, URI", exp_4c),
    ("4d", "traversal, methods, malformed HTTP", exp_4d),
    ("4e", "hostile incident content", exp_4e),
    ("5", "sustained load, read = written, incidents = scan", bench_load),
    ("6a", "webhook signature", script("e2e/test_webhook_signature.py")),
    ("6b", "secrets in logs, metrics, API, state", exp_6b),
    ("6c", "URL credentials in config errors", exp_6c),
    ("6d", "redaction of the output stream", script("integration/test_redaction.py")),
    ("6e", "default listen address and API token", exp_6e),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the campaign's own experiments, smaller; no test scripts")
    ap.add_argument("--only", help="comma-separated experiment ids")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    only = set(a.only.split(",")) if a.only else None
    rows, failed = [], 0
    for eid, what, fn in EXPERIMENTS:
        if only and eid not in only:
            continue
        if a.quick and hasattr(fn, "script"):
            rows.append((eid, what, "left to ctest (%s)" % fn.script, "-"))
            continue
        work = tl.Workdir("campaign-" + eid.replace("+", "-").replace("'", "b"))
        t0 = time.monotonic()
        try:
            figure, verdict = fn(Ctx(work, a.quick)), "PASS"
            work.run_cleanups()
            tl.kill_all()
            work.cleanup()
        except tl.Skip as e:
            figure, verdict = "skipped: %s" % e, "SKIP"
            work.run_cleanups()
            tl.kill_all()
        except Exception as e:  # noqa: BLE001 - one experiment's failure does not stop the campaign
            figure, verdict = "%s: %s" % (type(e).__name__, str(e)[:300]), "FAIL"
            failed += 1
            work.run_cleanups()
            tl.kill_all()
            print("  work dir kept: %s" % work.path)
        rows.append((eid, what, figure, verdict))
        print("%-6s %-48s %-5s %5.0fs  %s" % (eid, what, verdict, time.monotonic() - t0, figure), flush=True)
    if a.markdown:
        print("\n| # | experiment | figure | result |\n|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %s |" % tuple(x.replace("|", "/") for x in r))
    skipped = sum(1 for r in rows if r[3] == "SKIP")
    print("%d experiment(s): %d failed, %d skipped" % (len(rows), failed, skipped))
    allow_skip = os.environ.get("FAULTLINE_ALLOW_SKIP") == "1"
    sys.exit(1 if failed or (skipped and not allow_skip) else 0)


if __name__ == "__main__":
    main()
