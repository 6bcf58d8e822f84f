"""A 50 MB line without a newline: memory stays bounded (the line is cut at max_line_bytes and counted), the partial
line is flushed after the partial-line timeout, and the lines after it are matched as usual."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    d = tl.follow_from_start(work, "LINE 1 before")
    base = d.memory()["VmHWM"] / 1024
    chunk = b"LINE 2 " + b"x" * (1 << 20)
    with open(log, "ab") as f:
        for i in range(50):
            f.write(chunk if i == 0 else b"y" * (1 << 20))
    # No newline: after the partial-line timeout the (cut) line becomes a record.
    d.wait_incidents(2, 30, what="the long line flushed at its timeout")
    with open(log, "ab") as f:
        f.write(b"\nLINE 3 after\n")
    d.wait_incidents(3, what="line 3")
    peak = d.memory()["VmHWM"] / 1024
    d.stop_ok()
    tl.assert_exactly_once(d.incidents(), [1, 2, 3])
    stats = d.final_stats()
    check(stats["truncated_lines"] >= 1, "truncated lines counted: %s" % stats["truncated_lines"])
    grew_mib = (peak - base) / 1024.0
    print("peak RSS grew by %.1f MiB while reading a 50 MiB line" % grew_mib)
    check(grew_mib < 40, "memory grew by %.1f MiB for one long line" % grew_mib)
    long_text = [i for i in d.incidents() if i["fields"]["n"] == "2"][0]["evidence"][-1]["text"]
    check(len(long_text) <= 64 * 1024, "evidence text of the long line is %d bytes" % len(long_text))


if __name__ == "__main__":
    tl.main(test)
