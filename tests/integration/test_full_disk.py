#!/usr/bin/env python3
"""A full disk under the state dir: the state dir is a real 1 MiB tmpfs, the webhook receiver is down and a writer keeps
appending failure lines. Once the tmpfs is filled, /readyz answers 503 naming the failing writes and
faultline_state_writable is 0; nothing accepted is dropped (the revisions wait in memory and reading pauses). Once space
is freed and the receiver is up, every revision on the output is delivered, none dropped, and /readyz is 200 again."""
import errno
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

FILES = 4


def mount_tmpfs(work, path):
    os.makedirs(path)
    if os.geteuid() != 0:
        raise tl.Skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise tl.Skip("cannot mount a tmpfs: %s" % (r.stderr.strip() or "exit %d" % r.returncode))
    # Registered first, so it runs after the daemon is stopped.
    work.on_cleanup(lambda: subprocess.run(["umount", "-l", path], capture_output=True))


def fill(path):
    """Writes `path` until the file system is full; returns the bytes written."""
    n = 0
    chunk = b"\0" * 4096
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                n += f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                return n


def writer(paths, stop, counts):
    files = [open(p, "ab", buffering=0) for p in paths]
    n = 0
    while not stop.is_set() and n < 4000:
        for k, f in enumerate(files):
            n += 1
            f.write(b"2026-11-30T10:00:00.000Z ERROR BOOM %d\n2026-11-30T10:00:00.000Z INFO filler\n" % n)
            counts["boom"] += 1
            counts["lines"] += 2
        time.sleep(0.25)  # 16 revisions a second: what the tmpfs holds besides the filler lasts the test
    for f in files:
        f.close()


def readyz(d):
    status, _, body = d.get("/readyz")
    return status, body.decode(errors="replace")


def test(work):
    tiny = os.path.join(work.path, "tiny")
    mount_tmpfs(work, tiny)
    work.write_rule("e2e-boom.yaml", tl.BOOM_RULE)
    port = tl.free_port()  # nothing listens yet: every delivery waits in the spool
    # A small queue bound: the revisions held in memory for the spool pause reading early.
    config = "checkpoint_interval: 300ms\nqueue_capacity: 16\n" + tl.sinks_yaml([{
        "name": "hook", "url": "http://127.0.0.1:%d/hook" % port, "format": "json",
        "timeout": "2s", "backoff_initial": "100ms", "backoff_max": "300ms",
    }])
    paths = [os.path.join(work.logs, "w%d.log" % k) for k in range(FILES)]
    for p in paths:
        open(p, "w").close()
    d = tl.Daemon(work, ["--source", os.path.join(work.logs, "w*.log"), "--start-at", "beginning"], config=config,
                  state=tiny).start()
    check(readyz(d)[0] == 200, "not ready at the start: %s" % (readyz(d),))

    counts = {"boom": 0, "lines": 0}
    stop = threading.Event()
    work.on_cleanup(stop.set)
    t = threading.Thread(target=writer, args=(paths, stop, counts), daemon=True)
    t.start()
    wait_until(lambda: (d.metric("faultline_spool_bytes", sink="hook") or 0) > 0, 30, what="deliveries in the spool",
               alive=d)

    filled = fill(os.path.join(tiny, "filler"))
    print("tmpfs filled with %d more bytes" % filled)
    wait_until(lambda: readyz(d)[0] == 503, 30, what="/readyz 503 while the disk is full", alive=d)
    status, body = readyz(d)
    check("state_writes" in body and "No space left on device" in body, "/readyz does not name the reason:\n%s" % body)
    wait_until(lambda: d.metric("faultline_state_writable") == 0, 10, what="faultline_state_writable 0", alive=d)
    wait_until(lambda: (d.metric("faultline_state_write_failures_total", what="spool") or 0) > 0, 30,
               what="failed spool writes counted", alive=d)
    # Revisions keep coming (they wait in memory), and none is dropped.
    on_output = len(d.incidents())
    wait_until(lambda: len(d.incidents()) > on_output, 30, what="revisions emitted while the disk is full", alive=d)
    # Past queue_capacity revisions waiting for the spool, reading pauses: the lines written pile up unread.
    wait_until(lambda: counts["lines"] - (d.metric("faultline_lines_read_total") or 0) >= 40, 30,
               what="reading to pause while the spool cannot be written", alive=d)
    check(d.metric("faultline_spool_dropped_total") == 0, "deliveries dropped while the disk is full")
    print("while full: /readyz %d, %s spool write failure(s), %s checkpoint failure(s)"
          % (status, d.metric("faultline_state_write_failures_total", what="spool"),
             d.metric("faultline_state_write_failures_total", what="checkpoint")))

    # Space returns, the receiver comes up, the writer stops: everything on the output is delivered.
    os.unlink(os.path.join(tiny, "filler"))
    rx = tl.Receiver(port=port, work=work).start()
    stop.set()
    t.join()
    wait_until(lambda: len(d.incidents()) >= counts["boom"], 60, what="all %d revisions on the output" % counts["boom"],
               alive=d)
    wait_until(lambda: d.metric("faultline_lines_read_total") == counts["lines"], 30, what="every line read", alive=d)

    def missing():
        got = {r["headers"].get("webhook-id") for r in rx.received()}
        return sorted({"%s-%d" % (i["id"], i["revision"]) for i in d.incidents()} - got)

    wait_until(lambda: not missing(), 60, what="every revision delivered after space returned", alive=d)
    wait_until(lambda: readyz(d)[0] == 200, 30, what="/readyz 200 again", alive=d)
    check(d.metric("faultline_state_writable") == 1, "faultline_state_writable is not 1 again")
    check(d.metric("faultline_spool_dropped_total") == 0, "deliveries dropped")
    keys = {(i["id"], i["revision"]) for i in d.incidents()}
    check(len(keys) == counts["boom"], "%d revisions on the output for %d failure lines" % (len(keys), counts["boom"]))
    check(d.stop() == 0, "exit status non-zero")
    print("%d failure lines, %d revisions delivered (%d requests), 0 dropped"
          % (counts["boom"], len(keys), len(rx.received())))


if __name__ == "__main__":
    tl.main(test)
