"""`faultline run -` follows standard input; at its end the partial last line is flushed, held incidents are
released and the daemon exits 0."""
import os
import subprocess

import harness
from harness import check


def test(work):
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    data = "".join("LINE %d from a pipe\n" % n for n in range(1, 501)) + "LINE 501 no newline at the end"
    out = os.path.join(work.path, "out.jsonl")
    p = subprocess.run([harness.BIN, "run", "-", "--rules", work.rules, "--state-dir", work.state, "--listen", "off",
                        "--output", out], input=data, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "exit status %d:\n%s" % (p.returncode, p.stderr))
    incs = harness.read_incidents(out)
    harness.assert_exactly_once(incs, range(1, 502))
    check({i["stream"] for i in incs} == {"stdin"}, "stream: %s" % {i["stream"] for i in incs})
    # Default output is standard output.
    p = subprocess.run([harness.BIN, "run", "-", "--rules", work.rules, "--state-dir", work.state + "2",
                        "--listen", "off"], input="LINE 7 to stdout\n", capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and '"rule":"every-line"' in p.stdout, "stdout output: %r %s" % (p.stdout, p.stderr))


if __name__ == "__main__":
    harness.main(test)
