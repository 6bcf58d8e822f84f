#!/usr/bin/env python3
"""/readyz says 200 only once the first scan of the sources is done: a line appended as soon as it does is read,
even with `--start-at end` (the default) and a directory of files that takes the first scan a while. Before, the
listener answered 200 as soon as it was bound, and a line written between that and the file's opening was before
the file's starting offset, never read."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check, wait_until  # noqa: E402

FILES = 3000


def test(work):
    work.write_rule("every-line.yaml", tl.EVERY_LINE_RULE)
    names = [os.path.join(work.logs, "f%05d.log" % i) for i in range(FILES)]
    for p in names:
        open(p, "w").close()
    last = names[-1]  # newest mtime and last name: opened last in the first scan
    d = tl.Daemon(work, ["--source", os.path.join(work.logs, "f*.log")])
    d.start(wait=False)
    # Poll /readyz as fast as a probe can; the moment it says 200, append to the last file.
    wait_until(lambda: d.proc.poll() is not None or d.get("/readyz", timeout=2)[0] == 200, 60, interval=0.001,
               what="/readyz", alive=d)
    work.append("LINE 1 written the moment /readyz said 200", path=last)
    check(d.logged("following "), "/readyz said 200 before the first scan of the sources was logged as done")
    d.wait_incidents(1, timeout=30, what="the line written right after /readyz said 200")
    d.stop_ok()
    tl.assert_exactly_once(d.incidents(), [1])


if __name__ == "__main__":
    tl.main(test)
