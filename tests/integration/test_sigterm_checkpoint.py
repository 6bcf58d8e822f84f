"""SIGTERM: the daemon stops reading, finishes what is in flight, writes the checkpoint (offsets at the end of what
it read) and exits 0; started again it reads only what was appended meanwhile."""
import json
import os
import sys
import signal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    with open(log, "w") as f:
        for n in range(1, 201):
            f.write("LINE %d before\n" % n)
        f.write("LINE 201 partial line without its newline")
    args = ["--source", log, "--start-at", "beginning"]
    d = tl.Daemon(work, args).start()
    d.wait_incidents(200, what="200 lines")
    rc = d.stop(signal.SIGTERM)
    check(rc == 0, "exit status %s after SIGTERM" % rc)
    with open(os.path.join(work.state, "checkpoint.json")) as f:
        cp = json.load(f)
    check(cp["version"] == 1, "checkpoint version %s" % cp.get("version"))
    entry = [e for e in cp["files"] if e["path"] == log]
    check(len(entry) == 1, "checkpoint entry for %s: %s" % (log, cp["files"]))
    size = os.path.getsize(log)
    st = os.stat(log)
    check(entry[0]["inode"] == st.st_ino and entry[0]["dev"] == st.st_dev, "identity in checkpoint")
    # Either the partial line was flushed at its timeout (offset = size) or it waits (offset = its start).
    partial_start = size - len("LINE 201 partial line without its newline")
    check(entry[0]["offset"] in (size, partial_start), "checkpoint offset %d, file size %d" % (entry[0]["offset"], size))
    emitted_first = len(d.incidents())

    with open(log, "a") as f:
        f.write("\n")
        for n in range(202, 301):
            f.write("LINE %d after\n" % n)
    d2 = tl.Daemon(work, args).start()
    d2.wait_incidents(300, what="300 lines")
    rc = d2.stop(signal.SIGINT)
    check(rc == 0, "exit status %s after SIGINT" % rc)
    tl.assert_exactly_once(d2.incidents(), range(1, 301))
    stats = d2.final_stats()
    check(stats["lines"] <= 101, "second run read %d lines; it should resume, not start over" % stats["lines"])


if __name__ == "__main__":
    tl.main(test)
