"""Rename rotation under continuous writes: app.log is renamed to app.log.1 (and app.log.1 to app.log.2) every few
hundred lines while a writer keeps writing; every line written is read exactly once, in a stream that continues."""
import os
import threading
import time

import harness
from harness import check


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
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    log = os.path.join(work.logs, "app.log")
    open(log, "w").close()
    d = harness.Daemon(work, ["--source", log]).start()
    total = 6000
    t = threading.Thread(target=writer, args=(log, total, 700, 3000))
    t.start()
    t.join()
    harness.wait_until(lambda: len(d.incidents()) >= total, 30, what="all %d lines" % total)
    time.sleep(1.0)  # anything more (duplicates) would show now
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    harness.assert_exactly_once(d.incidents(), range(1, total + 1))
    stats = d.final_stats()
    check(stats is not None, "no final stats logged")
    check(stats["lines"] == total, "daemon counted %d lines, %d written" % (stats["lines"], total))
    check(stats["rotations"] >= total // 700 - 1, "rotations counted: %s" % stats["rotations"])
    streams = {i["stream"] for i in d.incidents()}
    check(streams == {log}, "one logical stream expected, got %s" % streams)


if __name__ == "__main__":
    harness.main(test)
