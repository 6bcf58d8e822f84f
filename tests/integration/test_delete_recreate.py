"""Delete and recreate: a file deleted right after its last lines were written is still read to its end (the
daemon holds it open); the file created again under the same name is read from its start. (A file created and
deleted before the daemon ever opened it is beyond anyone's reach; the test lets each new file be seen.)"""
import os
import time

import harness
from harness import check


def test(work):
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    log = os.path.join(work.logs, "app.log")
    with open(log, "w") as f:
        f.write("LINE 1 first\n")
    d = harness.Daemon(work, ["--source", os.path.join(work.logs, "*.log"), "--start-at", "beginning"]).start()
    harness.wait_until(lambda: len(d.incidents()) >= 1, 20, what="line 1")
    n = 1
    for cycle in range(5):
        with open(log, "ab") as f:
            for _ in range(200):
                n += 1
                f.write(b"LINE %d cycle %d\n" % (n, cycle))
        os.unlink(log)  # deleted at once: the tail of it is read through the open descriptor
        time.sleep(0.05 * cycle)
        with open(log, "wb") as f:
            n += 1
            f.write(b"LINE %d recreated %d\n" % (n, cycle))
        # A file created and deleted before the daemon ever saw it cannot be read by anyone; let it be seen.
        harness.wait_until(lambda: len(d.incidents()) >= n, 20, what="line %d" % n)
    harness.wait_until(lambda: len(d.incidents()) >= n, 30, what="%d lines" % n)
    time.sleep(1.0)
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    harness.assert_exactly_once(d.incidents(), range(1, n + 1))
    stats = d.final_stats()
    check(stats["deleted"] >= 5, "deleted files counted: %s" % stats["deleted"])


if __name__ == "__main__":
    harness.main(test)
