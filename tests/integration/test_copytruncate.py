"""copytruncate: the file is copied away and truncated in place while the writer (O_APPEND) goes on. Lines are read
exactly once — including when the file refills past the old read offset before the daemon looks (the fingerprint
of its first bytes tells new content from old) — and every truncation is counted."""
import os
import sys
import shutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    log = work.log_file
    d = tl.follow(work)
    f = open(log, "ab", buffering=0)  # O_APPEND: after a truncation the writer continues at the new end
    n = 0
    rounds = 6
    for r in range(rounds):
        count = 100 + 150 * (r % 2)  # alternately shorter and longer than the previous content
        for _ in range(count):
            n += 1
            f.write(b"LINE %d round %d\n" % (n, r))
        d.wait_incidents(n, 20, what="%d lines" % n)
        shutil.copy(log, log + ".1")
        with open(log, "r+b") as t:
            t.truncate(0)
        if r % 2 == 1:
            # Refill at once, beyond the old offset: only the content fingerprint shows the truncation.
            for _ in range(400):
                n += 1
                f.write(b"LINE %d refill %d %s\n" % (n, r, b"y" * 40))
    for _ in range(50):
        n += 1
        f.write(b"LINE %d tail\n" % n)
    d.wait_incidents(n, 20, what="%d lines" % n)
    d.stop_ok()
    tl.assert_exactly_once(d.incidents(), range(1, n + 1))
    stats = d.final_stats()
    check(stats["truncations"] == rounds, "truncations counted: %s, expected %d" % (stats["truncations"], rounds))


if __name__ == "__main__":
    tl.main(test)
