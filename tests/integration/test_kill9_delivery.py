#!/usr/bin/env python3
"""kill -9 loses no webhook delivery: a writer appends failure lines (and their recoveries) to several files while the
daemon, with a webhook receiver answering 200, is killed with SIGKILL again and again — often the moment a revision
appears on its output, when it is on its way to the spool — then a final clean run catches up. Every revision on the
daemon's output (incident id, revision) reaches the receiver at least once, and a revision delivered twice carries the
same webhook-id (<incident id>-<revision>) each time, so a receiver drops the copy."""
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

FILES = 4
KILLS = 12
MAX_BURSTS = 200      # of lines per file, one every BURST_EVERY seconds until the kills are done
BURST_EVERY = 0.3
PER_BURST = 16        # lines per file per burst: BOOM lines, RECOVERED lines of earlier ones, filler


def writer(paths, stop, counts):
    """Appends bursts to every file: 3 new failures per burst and file, the recovery of those of two bursts ago,
    filler between them (about 80 revisions a second in all, what a receiver in Python takes on a busy machine).
    Some lines are written in two parts."""
    files = [open(p, "ab", buffering=0) for p in paths]
    n = 0
    rng = random.Random(7)
    pending = [[] for _ in paths]  # per file: the n of failures not recovered yet, oldest first
    for burst in range(MAX_BURSTS):
        if stop.is_set():
            break
        for k, f in enumerate(files):
            lines = []
            for _ in range(3):
                n += 1
                pending[k].append(n)
                lines.append(b"2026-11-30T10:00:00.000Z ERROR BOOM %d on worker %d" % (n, k))
                counts["boom"] += 1
            if burst >= 2:
                for m in pending[k][:3]:
                    lines.append(b"2026-11-30T10:00:01.000Z INFO RECOVERED %d" % m)
                    counts["recovered"] += 1
                del pending[k][:3]
            while len(lines) < PER_BURST:
                lines.append(b"2026-11-30T10:00:01.000Z INFO filler %d" % rng.randrange(10 ** 6))
            data = b"\n".join(lines) + b"\n"
            if rng.random() < 0.3:
                cut = rng.randrange(1, len(data))
                f.write(data[:cut])
                f.write(data[cut:])
            else:
                f.write(data)
        time.sleep(BURST_EVERY)
    for f in files:
        f.close()


def output_keys(path, cut=None):
    """(id, revision) of every revision on the output; lines a kill cut short go into `cut` (each one is written
    again whole by the next run: its checkpoint was taken before it)."""
    return [(i["id"], i["revision"]) for i in tl.read_incidents(path, [] if cut is None else cut)]


def test(work):
    work.write_rule("e2e-boom.yaml", tl.BOOM_RULE)
    rx = tl.Receiver(work=work).start()
    config = "checkpoint_interval: 200ms\n" + tl.sinks_yaml([{
        "name": "hook", "url": rx.url(), "format": "json",
        "timeout": "2s", "backoff_initial": "50ms", "backoff_max": "200ms",
    }])
    paths = [os.path.join(work.logs, "w%d.log" % k) for k in range(FILES)]
    for p in paths:
        open(p, "w").close()
    args = ["--source", os.path.join(work.logs, "w*.log"), "--start-at", "beginning"]
    output = os.path.join(work.path, "out.jsonl")

    counts = {"boom": 0, "recovered": 0}
    stop = threading.Event()
    t = threading.Thread(target=writer, args=(paths, stop, counts), daemon=True)
    work.on_cleanup(stop.set)
    t.start()

    rng = random.Random(11)
    t0 = time.monotonic()
    for cycle in range(KILLS):
        d = tl.Daemon(work, args, name="run", config=config, output=output).start()
        before = os.path.getsize(output) if os.path.exists(output) else 0
        # A kill while revisions are on their way: the moment the output grows (most cycles), or a little later.
        wait_until(lambda: os.path.exists(output) and os.path.getsize(output) > before, 30, interval=0.002,
                   what="cycle %d: a revision on the output" % cycle, alive=d)
        if cycle % 2 == 1:
            time.sleep(rng.uniform(0, 1.0))  # a random moment of the run (past a checkpoint or two)
        d.kill9()
    stop.set()
    t.join()
    kill_seconds = time.monotonic() - t0

    # The final clean run: everything written is read, emitted and delivered.
    expected = counts["boom"] + counts["recovered"]
    d = tl.Daemon(work, args, name="run", config=config, output=output).start()
    wait_until(lambda: len(set(output_keys(output))) >= expected, 60, what="all %d revisions on the output" % expected,
               alive=d)

    def missing():
        got = {r["headers"].get("webhook-id") for r in rx.received()}
        return sorted({"%s-%d" % k for k in output_keys(output)} - got)

    try:
        wait_until(lambda: not missing(), 60, what="every revision of the output delivered", alive=d)
    except tl.Failure:
        lost = missing()
        raise tl.Failure("%d of %d revisions on the output never delivered, e.g. %s"
                         % (len(lost), len(set(output_keys(output))), lost[:10]))
    check(d.stop() == 0, "the final run exited non-zero")

    cut = []
    keys = set(output_keys(output, cut))
    check(len(keys) == expected, "%d revisions on the output, %d lines asked for one" % (len(keys), expected))
    check(len(cut) <= KILLS, "%d lines cut short on the output by %d kills" % (len(cut), KILLS))
    # Duplicates (the documented at-least-once case) carry the webhook-id of their revision, as every delivery does.
    ids = []
    for r in rx.received():
        body = json.loads(r["body"])
        wid = r["headers"].get("webhook-id")
        check(wid == "%s-%d" % (body["id"], body["revision"]),
              "webhook-id %s on a delivery of %s revision %s" % (wid, body["id"], body["revision"]))
        ids.append(wid)
    dups = len(ids) - len(set(ids))
    print("%d kills in %.1fs; %d revisions on the output (%d line(s) cut short by a kill and ended), %d deliveries, "
          "%d duplicate(s), 0 lost" % (KILLS, kill_seconds, len(keys), len(cut), len(ids), dups))


if __name__ == "__main__":
    tl.main(test)
