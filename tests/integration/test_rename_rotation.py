"""Rename rotation under continuous writes: app.log is renamed to app.log.1 (and app.log.1 to app.log.2) every few
hundred lines while a writer keeps writing; every line written is read exactly once, in a stream that continues."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def writer(path, total, per_file, rate):
    n = 0
    f = open(path, "ab", buffering=0)
    start = time.time()
    while n < total:
        n += 1
        f.write(b"LINE %d payload %s\n" % (n, b"x" * (n % 50)))
        if n % per_file == 0:
            f.close()
            if os.path.exists(path + ".1"):
                os.replace(path + ".1", path + ".2")
            os.rename(path, path + ".1")
            f = open(path, "ab", buffering=0)
        # pace: rate lines per second
        ahead = n / rate - (time.time() - start)
        if ahead > 0:
            time.sleep(ahead)
    f.close()


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    d = tl.follow(work)
    total = 6000
    t = threading.Thread(target=writer, args=(log, total, 700, 3000))
    t.start()
    t.join()
    stats = d.finish_exactly_once(range(1, total + 1))
    check(stats is not None, "no final stats logged")
    check(stats["lines"] == total, "daemon counted %d lines, %d written" % (stats["lines"], total))
    check(stats["rotations"] >= total // 700 - 1, "rotations counted: %s" % stats["rotations"])
    streams = {i["stream"] for i in d.incidents()}
    check(streams == {log}, "one logical stream expected, got %s" % streams)


if __name__ == "__main__":
    tl.main(test)
