"""More live files than tail.max_open_files: 10,000 files with max_open_files 256. Descriptors rotate among the files,
so every line of every file is read and raises its incident, the daemon never holds more than 256 descriptors on
them (one more for a moment while a new file is looked at), and one more line appended to 100 files later (most of them without a descriptor by then) is read as well."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

FILES = 10000
LIMIT = 256
APPENDED = 100


def open_under(pid, directory):
    """Descriptors of process `pid` open on files under `directory`."""
    n = 0
    fd_dir = "/proc/%d/fd" % pid
    for name in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, name)).startswith(directory + "/"):
                n += 1
        except OSError:
            pass
    return n


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    logs = os.path.join(work.path, "many")
    os.makedirs(logs)
    for i in range(FILES):
        with open(os.path.join(logs, "f%05d.log" % i), "w") as f:
            f.write("LINE %d payload\n" % (i + 1))
    d = tl.Daemon(work, ["--source", os.path.join(logs, "*.log"), "--start-at", "beginning"],
                  config="tail:\n  max_open_files: %d\n" % LIMIT).start()
    most_open = [0]

    def all_in(n):
        most_open[0] = max(most_open[0], open_under(d.pid, logs))
        return len(d.incidents()) >= n

    start = time.monotonic()
    tl.wait_until(lambda: all_in(FILES), 120 * tl.TIME_SCALE, interval=0.2, what="an incident for each of %d files"
                  % FILES, alive=d)
    first_pass = time.monotonic() - start
    check(most_open[0] <= LIMIT + 1, "%d descriptors open on the log files (limit %d)" % (most_open[0], LIMIT))
    m = d.metrics()
    check((m.value("faultline_file_reopens_total") or 0) > 0, "no reopen counted")

    # One more line to every 100th file: most of them wait without a descriptor now.
    for k in range(APPENDED):
        with open(os.path.join(logs, "f%05d.log" % (k * (FILES // APPENDED))), "a") as f:
            f.write("LINE %d payload\n" % (FILES + k + 1))
    tl.wait_until(lambda: all_in(FILES + APPENDED), 60 * tl.TIME_SCALE, interval=0.2,
                  what="the %d appended lines" % APPENDED, alive=d)
    tl.wait_until(lambda: d.metric("faultline_files_waiting") == 0, 30 * tl.TIME_SCALE, what="no file waiting")
    check(d.metric("faultline_source_lag_bytes") == 0, "lag left: %s" % d.metric("faultline_source_lag_bytes"))
    check(most_open[0] <= LIMIT + 1, "%d descriptors open on the log files (limit %d)" % (most_open[0], LIMIT))
    stats = d.finish_exactly_once(range(1, FILES + APPENDED + 1))
    check(stats["lines"] == FILES + APPENDED, "daemon counted %d lines" % stats["lines"])
    print("%d files, max_open_files %d: first pass %.1f s, most descriptors open %d, reopens %d"
          % (FILES, LIMIT, first_pass, most_open[0], stats.get("file_reopens", -1)))


if __name__ == "__main__":
    tl.main(test)
