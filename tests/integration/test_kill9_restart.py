"""kill -9 mid-stream, then restart: reading resumes from the last checkpoint; lines read again after the crash give
the same incident ids, and no (id, revision) is emitted twice — every line is reported exactly once overall."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def writer(paths, start, end, rate, stop_at=None):
    files = [open(p, "ab", buffering=0) for p in paths]
    t0 = time.time()
    for k, n in enumerate(range(start, end + 1)):
        files[n % len(files)].write(b"LINE %d crash-test %s\n" % (n, b"z" * (n % 30)))
        ahead = (k + 1) / rate - (time.time() - t0)
        if ahead > 0:
            time.sleep(ahead)
    for f in files:
        f.close()


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    cfg = os.path.join(work.path, "faultline.yaml")
    with open(cfg, "w") as f:
        f.write("checkpoint_interval: 300ms\n")
    paths = [os.path.join(work.logs, "a.log"), os.path.join(work.logs, "b.log")]
    for p in paths:
        open(p, "w").close()
    args = ["--config", cfg, "--source", os.path.join(work.logs, "*.log")]
    total = 3000
    d1 = tl.Daemon(work, args, name="run").start()
    t = threading.Thread(target=writer, args=(paths, 1, total, 1500))
    t.start()
    d1.wait_incidents(total // 3, what="a third of the lines before the crash")
    d1.kill9()
    check(os.path.exists(os.path.join(work.state, "checkpoint.json")), "no checkpoint before the crash")
    before = len(d1.incidents())
    check(0 < before < total, "crash should come mid-stream (%d incidents before it)" % before)
    time.sleep(0.3)
    d2 = tl.Daemon(work, args, name="run").start()  # same output file, appended
    t.join()
    stats = d2.finish_exactly_once(range(1, total + 1), 40, what="all %d lines after the restart" % total)
    print("lines before the crash: %d; after the restart: read %d lines, %d duplicate revision(s) suppressed"
          % (before, stats["lines"], stats["suppressed_duplicates"]))


if __name__ == "__main__":
    tl.main(test)
