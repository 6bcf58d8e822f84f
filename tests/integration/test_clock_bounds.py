"""Each stream has its own bounded event clock.

- A line dated 2099 in one followed file resolves nothing (counted in faultline_timestamps_rejected_total), and a
  later failure in another file stays firing.
- A critical line without a timestamp is not held for hours because another followed file logs local time 8 h behind
  UTC: the hold ends within its duration of wall time.
- SIGTERM emits a held incident instead of keeping it back in the checkpoint.
- `scan`: results do not depend on the order of the files; lines before a file's first timestamp take that time (not
  the file's mtime); nothing is `resolved` unless the log shows it; failures after the time went back a day count.
"""
import datetime
import glob
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

CATALOG = os.path.join(tl.SOURCE_DIR, "rules")
OOM = ("ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
       "of 79.19 GiB of which 1.02 GiB is free.")
FMHA = "RuntimeError: Error in function 'TllmGenFmhaRunner' at /x/fmhaRunner.cuh:37: Unsupported architecture"

HELD_RULE = """\
id: held-symptom
title: a symptom held for its root cause
severity: critical
cascade: {window: 2m, hold: 1h}
events:
  e: 'SYMPTOM of something'
"""


def rfc3339(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def subdir(work, name):
    d = os.path.join(work.path, name)
    os.makedirs(os.path.join(d, "logs"))
    os.makedirs(os.path.join(d, "state"))
    return d


def append(path, *lines):
    with open(path, "a") as f:
        for l in lines:
            f.write(l + "\n")


def api_incidents(d):
    return tl.http_json(d.base + "/api/v1/incidents")


def far_future_line_resolves_nothing(work):
    d_dir = subdir(work, "future")
    a, b = os.path.join(d_dir, "logs", "streamA.log"), os.path.join(d_dir, "logs", "streamB.log")
    yesterday = utcnow() - datetime.timedelta(days=1)
    append(a, rfc3339(yesterday) + " " + OOM)
    d = tl.Daemon(work, ["--source", os.path.join(d_dir, "logs", "*.log"), "--start-at", "beginning"], name="future",
                  rules=CATALOG, state=os.path.join(d_dir, "state")).start()
    d.wait_incidents(1, what="streamA's incident")
    append(b, "2099-01-01T00:00:00.000Z INFO far future line")
    tl.wait_until(lambda: (d.metric("faultline_lines_read_total") or 0) >= 2, 30, what="the 2099 line read", alive=d)
    # The clock ticks once a second: a clock moved to 2099 would resolve streamA's incident at the next tick.
    d.settle(quiet=2.5)
    check(all(i["status"] == "firing" for i in d.incidents()),
          "resolved after the 2099 line: %s" % [(i["stream"], i["revision"], i["status"]) for i in d.incidents()])
    tl.wait_until(lambda: (d.metric("faultline_timestamps_rejected_total", reason="future") or 0) >= 1, 30,
                  what="the 2099 line counted as rejected", alive=d)
    # A new failure in streamA: a repeat of the open incident, still firing.
    append(a, rfc3339(yesterday + datetime.timedelta(minutes=5)) + " " + OOM)
    tl.wait_until(lambda: any(i["count"] == 2 for i in d.incidents()), 30, what="the repeat in streamA", alive=d)
    d.settle(quiet=2.5)
    statuses = [(i["stream"], i["revision"], i["status"]) for i in d.incidents()]
    check(all(i["status"] == "firing" for i in d.incidents()), "an incident was resolved: %s" % statuses)
    listed = api_incidents(d)
    items = listed["incidents"] if isinstance(listed, dict) else listed
    check(any(i["status"] == "firing" and i["stream"].endswith("streamA.log") for i in items),
          "streamA's incident is not firing in the API: %s" % items)
    d.stop_ok()


def lagging_stream_never_gates_a_hold(work):
    d_dir = subdir(work, "lag")
    vllm, worker = os.path.join(d_dir, "logs", "vllm.log"), os.path.join(d_dir, "logs", "worker-stderr.log")
    open(vllm, "w").close()
    open(worker, "w").close()
    d = tl.Daemon(work, ["--source", os.path.join(d_dir, "logs", "*.log"), "--start-at", "beginning"], name="lag",
                  rules=CATALOG, state=os.path.join(d_dir, "state")).start()
    behind = utcnow() - datetime.timedelta(hours=8)
    append(vllm, "(APIServer pid=1) INFO %s [api_server.py:1896] vLLM API server version 0.19.0"
           % behind.strftime("%m-%d %H:%M:%S"))
    append(worker, FMHA)
    # The rule holds for late evidence for 5 s (its tolerance); the old clock kept it back for 8 hours.
    tl.wait_until(lambda: any(i["rule"] == "flashinfer-fmha-unsupported-arch" for i in d.incidents()), 30,
                  what="the FMHA incident, within its hold of wall time", alive=d)
    d.stop_ok()


def sigterm_releases_held(work):
    d_dir = subdir(work, "held")
    rules = os.path.join(d_dir, "rules")
    os.makedirs(rules)
    with open(os.path.join(rules, "held.yaml"), "w") as f:
        f.write(HELD_RULE)
    log = os.path.join(d_dir, "logs", "app.log")
    open(log, "w").close()
    d = tl.Daemon(work, ["--source", log, "--start-at", "beginning"], name="held", rules=rules,
                  state=os.path.join(d_dir, "state")).start()
    append(log, rfc3339(utcnow()) + " ERROR SYMPTOM of something")
    tl.wait_until(lambda: (d.metric("faultline_event_matches_total", rule="held-symptom") or 0) >= 1, 30,
                  what="the symptom line matched", alive=d)
    check(not d.incidents(), "the cascade incident went out before its hold: %s" % d.incidents())
    d.stop_ok(signal.SIGTERM)
    got = [i for i in d.incidents() if i["rule"] == "held-symptom"]
    check(len(got) == 1 and got[0]["status"] == "firing", "SIGTERM did not emit the held incident: %s" % got)


def summary(incidents):
    return sorted((i["rule"], i["stream"], i["id"], i["status"], i["count"], i["first_seen"]) for i in incidents)


def scan_is_order_independent(work):
    demo = sorted(glob.glob(os.path.join(tl.SOURCE_DIR, "examples", "demo", "*.log")))
    check(len(demo) >= 2, "demo logs: %s" % demo)
    _, forward, _ = tl.scan_incidents(*demo)
    _, backward, _ = tl.scan_incidents(*reversed(demo))
    check(summary(forward) == summary(backward), "scan A B != scan B A:\n%s\n%s" % (summary(forward), summary(backward)))
    fmha = [i for i in forward if i["rule"] == "flashinfer-fmha-unsupported-arch"]
    check(len(fmha) == 1 and fmha[0]["status"] == "firing", "the demo's FMHA seed: %s" % summary(fmha))

    corpus = sorted(glob.glob(os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real", "*.log")))
    check(len(corpus) >= 10, "corpus: %d files" % len(corpus))
    _, forward, _ = tl.scan_incidents(*corpus, timeout=300)
    _, backward, _ = tl.scan_incidents(*reversed(corpus), timeout=300)
    check(summary(forward) == summary(backward), "the corpus scanned in two orders differs")
    # Each file alone gives what it gives among the others (no file's time reaches another).
    one = corpus[0]
    _, alone, _ = tl.scan_incidents(one)
    among = [i for i in forward if i["stream"] == one]
    check(summary(alone) == summary(among), "%s alone differs from it among the others" % one)


def leading_lines_take_the_first_timestamp(work):
    # A file starts with lines without a time; its mtime is today; its first timestamp is a year ago.
    path = work.file("leading.log", "\n".join([
        "Warning: something without a time",
        FMHA,
        "2025-11-22T10:00:00.000Z INFO first stamped line",
        "2025-11-22T10:00:01.000Z INFO later",
    ]) + "\n")
    _, incidents, p = tl.scan_incidents(path)
    fmha = [i for i in incidents if i["rule"] == "flashinfer-fmha-unsupported-arch"]
    check(len(fmha) == 1, "FMHA incident: %s (%s)" % (fmha, p.stderr.decode()[-500:]))
    check(fmha[0]["first_seen"].startswith("2025-11-22T10:00:00"),
          "first_seen %s: the lines before the first timestamp did not take it" % fmha[0]["first_seen"])


def time_going_back_counts(work):
    path = work.file("back.log", "\n".join([
        "2026-11-30T12:00:00.000Z " + OOM,
        "2026-11-29T12:00:00.000Z " + OOM,
        "2026-11-29T12:00:05.000Z " + OOM,
    ]) + "\n")
    p = tl.run("scan", "--json", path, text=True)
    import json
    revisions = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    oom = [r for r in revisions if r["rule"] == "cuda-out-of-memory"]
    got = [(r["revision"], r["status"], r["count"], r["last_seen"][:19]) for r in oom]
    # Line 2 starts a new epoch of the stream (time went back a day): a repeat, counted, revision 2. Line 3, 5 s
    # later, is the same occurrence printed again (as it would be with time going forward).
    check(got == [(1, "firing", 1, "2026-11-30T12:00:00"), (2, "firing", 2, "2026-11-29T12:00:00")],
          "revisions after time went back: %s" % got)


def test(work):
    time_going_back_counts(work)
    leading_lines_take_the_first_timestamp(work)
    scan_is_order_independent(work)
    far_future_line_resolves_nothing(work)
    lagging_stream_never_gates_a_hold(work)
    sigterm_releases_held(work)


if __name__ == "__main__":
    tl.main(test)
