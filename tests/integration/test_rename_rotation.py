"""Rename rotation under continuous writes: app.log is renamed to app.log.1 (and app.log.1 to app.log.2) every few
hundred lines while a writer keeps writing; every line written is read exactly once, in a stream that continues.

The guarantee it rests on (docs/config.md, tail): a new file in a watched directory is opened within one poll after
its inotify event. The source names app.log only, so a file renamed away before the daemon opened it would never be
read; the writer therefore waits, before it renames a file away, until the daemon holds it open, and the test asserts
that each new app.log was opened on its event, not at a rescan: the daemon runs with `rescan_interval: 1h`, and every
open must come within OPEN_BOUND (far less than the 30 s full rescan), however busy the machine. The open latencies are
printed."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

OPEN_BOUND = 20.0  # seconds; the event opens it in one poll (milliseconds when the CPU is free)


class OpenWatch:
    """Notes when the daemon first holds a file open, polling /proc/<pid>/fd from its own thread. A file is asked for
    by inode and the time it was created (inodes are reused: app.log.2 replaced frees one for the next app.log)."""

    def __init__(self, pid):
        self.pid, self.stop = pid, False
        self.lock = threading.Lock()
        self.expected = {}  # inode -> created
        self.opened = {}    # (inode, created) -> start of the first scan after `created` that saw it open
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def expect(self, ino, created):
        with self.lock:
            self.expected[ino] = created

    def run(self):
        fd_dir = "/proc/%d/fd" % self.pid
        while not self.stop:
            scan_start = time.monotonic()
            try:
                names = os.listdir(fd_dir)
            except OSError:
                return
            inos = set()
            for name in names:
                try:
                    inos.add(os.stat(os.path.join(fd_dir, name)).st_ino)
                except OSError:
                    pass
            with self.lock:
                for ino, created in list(self.expected.items()):
                    if ino in inos and scan_start >= created:
                        self.opened[(ino, created)] = scan_start
                        del self.expected[ino]
            time.sleep(0.001)

    def when(self, ino, created):
        with self.lock:
            return self.opened.get((ino, created))


def wait_open(watch, path, ino, created, latencies):
    deadline = created + OPEN_BOUND * tl.TIME_SCALE
    while watch.when(ino, created) is None:
        check(time.monotonic() < deadline, "%s not opened %.0f s after it was created" % (path, OPEN_BOUND))
        time.sleep(0.002)
    latencies.append(max(0.0, watch.when(ino, created) - created))


def writer(watch, path, total, per_file, rate, latencies, errors):
    try:
        n = 0
        created = time.monotonic()
        f = open(path, "ab", buffering=0)
        ino = os.fstat(f.fileno()).st_ino
        watch.expect(ino, created)
        start = time.time()
        while n < total:
            n += 1
            f.write(b"LINE %d payload %s\n" % (n, b"x" * (n % 50)))
            if n % per_file == 0:
                f.close()
                wait_open(watch, path, ino, created, latencies)  # before it leaves the name the source follows
                if os.path.exists(path + ".1"):
                    os.replace(path + ".1", path + ".2")
                os.rename(path, path + ".1")
                created = time.monotonic()
                f = open(path, "ab", buffering=0)
                ino = os.fstat(f.fileno()).st_ino
                watch.expect(ino, created)
            # pace: rate lines per second
            ahead = n / rate - (time.time() - start)
            if ahead > 0:
                time.sleep(ahead)
        f.close()
        wait_open(watch, path, ino, created, latencies)
    except BaseException as e:  # noqa: B902 - reported by the test thread
        errors.append(e)


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    d = tl.follow(work, config="tail:\n  rescan_interval: 1h\n")
    total = 6000
    latencies, errors = [], []
    watch = OpenWatch(d.pid)
    t = threading.Thread(target=writer, args=(watch, log, total, 700, 3000, latencies, errors))
    t.start()
    t.join()
    watch.stop = True
    if errors:
        raise errors[0]
    stats = d.finish_exactly_once(range(1, total + 1))
    check(stats is not None, "no final stats logged")
    check(stats["lines"] == total, "daemon counted %d lines, %d written" % (stats["lines"], total))
    check(stats["rotations"] >= total // 700 - 1, "rotations counted: %s" % stats["rotations"])
    streams = {i["stream"] for i in d.incidents()}
    check(streams == {log}, "one logical stream expected, got %s" % streams)
    print("open latencies (ms, in order):", " ".join("%.0f" % (1000 * x) for x in latencies))
    latencies.sort()
    print("new file opened after its creation: median %.1f ms, max %.1f ms (%d files)"
          % (1000 * latencies[len(latencies) // 2], 1000 * latencies[-1], len(latencies)))


if __name__ == "__main__":
    tl.main(test)
