"""A 50 MB line without a newline: memory stays bounded (the line is cut at max_line_bytes and counted), the partial
line is flushed after the partial-line timeout, and the lines after it are matched as usual."""
import os
import time

import harness
from harness import check


def vm_hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test(work):
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    log = os.path.join(work.logs, "app.log")
    with open(log, "w") as f:
        f.write("LINE 1 before\n")
    d = harness.Daemon(work, ["--source", log, "--start-at", "beginning"]).start()
    harness.wait_until(lambda: len(d.incidents()) >= 1, 20, what="line 1")
    base = vm_hwm_kib(d.proc.pid)
    chunk = b"LINE 2 " + b"x" * (1 << 20)
    with open(log, "ab") as f:
        for i in range(50):
            f.write(chunk if i == 0 else b"y" * (1 << 20))
    # No newline: after the partial-line timeout the (cut) line becomes a record.
    harness.wait_until(lambda: len(d.incidents()) >= 2, 30, what="the long line flushed at its timeout")
    with open(log, "ab") as f:
        f.write(b"\nLINE 3 after\n")
    harness.wait_until(lambda: len(d.incidents()) >= 3, 20, what="line 3")
    peak = vm_hwm_kib(d.proc.pid)
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    harness.assert_exactly_once(d.incidents(), [1, 2, 3])
    stats = d.final_stats()
    check(stats["truncated_lines"] >= 1, "truncated lines counted: %s" % stats["truncated_lines"])
    grew_mib = (peak - base) / 1024.0
    print("peak RSS grew by %.1f MiB while reading a 50 MiB line" % grew_mib)
    check(grew_mib < 40, "memory grew by %.1f MiB for one long line" % grew_mib)
    long_text = [i for i in d.incidents() if i["fields"]["n"] == "2"][0]["evidence"][-1]["text"]
    check(len(long_text) <= 64 * 1024, "evidence text of the long line is %d bytes" % len(long_text))


if __name__ == "__main__":
    harness.main(test)
