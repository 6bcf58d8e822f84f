"""Exit statuses and messages of `check` and `test` on bad input, and the bounds on rule files:
- 2 for input that cannot be read (a missing path, something that is not a regular file, paths holding no rules),
  as `scan` does; 1 for what a rule file says (syntax, a bad value, a pattern the engines refuse);
- no message without a file name; a directory without rules is named;
- a 200 MB rule file is refused at file:1:1 before it is read (fast, no memory), a value over 64 KiB at its position;
- patterns are echoed as a bounded excerpt, never whole."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

GOOD = "id: t-1\ntitle: t\nseverity: warning\nevents:\n  e:\n    regex: 'abc'\n"


def rule(title="t", regex="abc"):
    return 'id: t-1\ntitle: "%s"\nseverity: warning\nevents:\n  e:\n    regex: \'%s\'\n' % (title, regex)


def expect(args, status, *texts, most=None):
    p = tl.run(*args, timeout=60)
    said = p.stdout + p.stderr
    check(p.returncode == status, "faultline %s: exit %d, expected %d:\n%s" % (
        " ".join(a[:60] for a in args), p.returncode, status, said[:2000]))
    for t in texts:
        check(t in said, "faultline %s: %r missing in:\n%s" % (" ".join(a[:60] for a in args), t, said[:2000]))
    for line in p.stderr.splitlines():
        check(not line.startswith(":"), "a message without a file name: %r" % line[:200])
    if most is not None:
        check(len(said) <= most, "faultline %s: %d bytes of messages (at most %d)" % (args[0], len(said), most))
    return p


def test(work):
    d = work.path
    missing = os.path.join(d, "missing.yaml")
    empty_dir = os.path.join(d, "empty")
    os.makedirs(empty_dir)
    only_empty = os.path.join(d, "only-empty")
    os.makedirs(only_empty)
    open(os.path.join(only_empty, "a.yaml"), "w").close()
    fifo = os.path.join(d, "fifo.yaml")
    os.mkfifo(fifo)
    good = work.file("good.yaml", GOOD)
    bad = work.file("bad.yaml", "id: t-1\ntitle: t\nseverity: fatal\nevents: {e: 'a'}\n")

    for cmd in ("check", "test"):
        expect([cmd, missing], 2, missing + ": error: no such file or directory")
        expect([cmd, fifo], 2, fifo + ": error: not a regular file")
        expect([cmd, empty_dir], 2, empty_dir + ": error: no rules found in '%s'" % empty_dir)
        expect([cmd, only_empty], 2, only_empty + ": error: no rules found in '%s'" % only_empty)
        expect([cmd, bad], 1, bad + ":3:11: error: ")
        expect([cmd, good, missing], 2, missing + ": error: ")
    expect(["check", good], 0, "ok: 1 rules")
    expect(["scan", "--rules", missing, good], 2, missing + ": error: no such file or directory")

    # A 200 MB rule file (sparse): refused before it is read.
    huge = work.file("huge.yaml", rule())
    os.truncate(huge, 200_000_000)
    started = time.monotonic()
    status, said, peak_mib = tl.run_peak(["check", huge], timeout=60)
    took = time.monotonic() - started
    check(status == 1, "check of a 200 MB file: exit %d, expected 1:\n%s" % (status, said[:2000]))
    refused = huge + ":1:1: error: the file is 200000000 bytes; a rule or config file may have at most 4 MiB"
    check(refused in said, "%r missing in:\n%s" % (refused, said[:2000]))
    print("200 MB rule file refused in %.2f s; peak RSS of that check %.0f MiB" % (took, peak_mib))
    check(took < 10, "refusing a 200 MB file took %.1f s" % took)
    # Reading the file would add its 200 MB; the process itself is far below this (under ASan too).
    check(peak_mib < 150, "peak RSS %.0f MiB" % peak_mib)

    # A 1 MB title: over the 4 MiB? no — over the 64 KiB a value may have, at its position; the message is short.
    long_title = work.file("title.yaml", rule(title="A" * 1_000_000))
    expect(["check", long_title], 1, long_title + ":2:8: error: a value of 1000000 bytes", "at most 64 KiB",
           most=2000)
    # A 60 KB pattern both engines refuse: echoed as an excerpt that says how long it was.
    unbalanced = work.file("pattern.yaml", rule(regex="(" + "a" * 60_000))
    expect(["check", unbalanced], 1, unbalanced + ":6:12: error: rule 't-1', event 'e'", "60001 bytes)", most=3000)


if __name__ == "__main__":
    tl.main(test)
