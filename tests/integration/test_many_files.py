"""1,000 watched files: files created while running are all found and read once; idle, the daemon uses no
measurable CPU (it sleeps on inotify; the periodic rescan is cheap)."""
import os
import time

import harness
from harness import check


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test(work):
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    count = 1000
    d = harness.Daemon(work, ["--source", os.path.join(work.logs, "*.log")]).start()
    for n in range(1, count + 1):
        with open(os.path.join(work.logs, "f%04d.log" % n), "w") as f:
            f.write("LINE %d in its own file\n" % n)
    harness.wait_until(lambda: len(d.incidents()) >= count, 60, what="%d files" % count)
    # A second line in every file.
    for n in range(1, count + 1):
        with open(os.path.join(work.logs, "f%04d.log" % n), "a") as f:
            f.write("LINE %d second\n" % (count + n))
    harness.wait_until(lambda: len(d.incidents()) >= 2 * count, 60, what="second lines")
    fds = len(os.listdir("/proc/%d/fd" % d.proc.pid))
    check(fds >= count, "%d descriptors open for %d followed files" % (fds, count))
    time.sleep(2.0)  # let the checkpoint and the last tick pass
    c0 = cpu_seconds(d.proc.pid)
    time.sleep(5.0)
    idle = cpu_seconds(d.proc.pid) - c0
    print("idle CPU with %d files: %.3f s over 5 s" % (count, idle))
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    harness.assert_exactly_once(d.incidents(), range(1, 2 * count + 1))
    check(idle < 0.5, "idle CPU %.3f s in 5 s with %d files" % (idle, count))


if __name__ == "__main__":
    harness.main(test)
