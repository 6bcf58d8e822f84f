"""1,000 watched files: files created while running are all found and read once; idle, the daemon uses no
measurable CPU (it sleeps on inotify; the periodic rescan is cheap)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    count = 1000
    d = tl.Daemon(work, ["--source", os.path.join(work.logs, "*.log")]).start()
    for n in range(1, count + 1):
        with open(os.path.join(work.logs, "f%04d.log" % n), "w") as f:
            f.write("LINE %d in its own file\n" % n)
    d.wait_incidents(count, 60, what="%d files" % count)
    # A second line in every file.
    for n in range(1, count + 1):
        with open(os.path.join(work.logs, "f%04d.log" % n), "a") as f:
            f.write("LINE %d second\n" % (count + n))
    d.wait_incidents(2 * count, 60, what="second lines")
    fds = len(os.listdir("/proc/%d/fd" % d.proc.pid))
    check(fds >= count, "%d descriptors open for %d followed files" % (fds, count))
    time.sleep(2.0)  # let the checkpoint and the last tick pass
    c0 = d.cpu_seconds()
    time.sleep(5.0)  # the idle period measured
    idle = d.cpu_seconds() - c0
    print("idle CPU with %d files: %.3f s over 5 s" % (count, idle))
    d.stop_ok()
    tl.assert_exactly_once(d.incidents(), range(1, 2 * count + 1))
    check(idle < 0.5, "idle CPU %.3f s in 5 s with %d files" % (idle, count))


if __name__ == "__main__":
    tl.main(test)
