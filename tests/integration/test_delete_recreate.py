"""Delete and recreate: a file deleted right after its last lines were written is still read to its end (the
daemon holds it open); the file created again under the same name is read from its start. (A file created and
deleted before the daemon ever opened it is beyond anyone's reach; the test lets each new file be seen.)"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    d = tl.follow_from_start(work, "LINE 1 first", source=os.path.join(work.logs, "*.log"))
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
        d.wait_incidents(n, what="line %d" % n)
    stats = d.finish_exactly_once(range(1, n + 1))
    check(stats["deleted"] >= 5, "deleted files counted: %s" % stats["deleted"])


if __name__ == "__main__":
    tl.main(test)
