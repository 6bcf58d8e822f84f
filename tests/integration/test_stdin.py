"""`faultline run -` follows standard input; at its end the partial last line is flushed, held incidents are
released and the daemon exits 0."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    data = "".join("LINE %d from a pipe\n" % n for n in range(1, 501)) + "LINE 501 no newline at the end"
    out = os.path.join(work.path, "out.jsonl")
    p = tl.run("run", "-", "--rules", work.rules, "--state-dir", work.state, "--listen", "off", "--output", out,
               input=data, timeout=60)
    check(p.returncode == 0, "exit status %d:\n%s" % (p.returncode, p.stderr))
    incs = tl.read_incidents(out)
    tl.assert_exactly_once(incs, range(1, 502))
    check({i["stream"] for i in incs} == {"stdin"}, "stream: %s" % {i["stream"] for i in incs})
    # Default output is standard output.
    p = tl.run("run", "-", "--rules", work.rules, "--state-dir", work.state + "2", "--listen", "off",
               input="LINE 7 to stdout\n", timeout=60)
    check(p.returncode == 0 and '"rule":"every-line"' in p.stdout, "stdout output: %r %s" % (p.stdout, p.stderr))


if __name__ == "__main__":
    tl.main(test)
