"""A config with mistakes: every one is reported with file:line:column (1-based) and nothing starts (exit 2).
A good config passes --check-config."""
import os
import sys
import re

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

BAD = """\
state_dir: /tmp/x
listen: 127.0.0.1:9464
unknown_key: 1
tail:
  rescan_interval: 10 seconds
  max_open_files: many
sources:
  - paths: [/var/log/*.log]
    format: json
    start_at: middle
  - type: kmsg
    labels: [a, b]
rules:
  overrides:
    cuda-oom:
      severity: fatal
      enable: false
"""

EXPECT = [
    (3, 1, "unknown key 'unknown_key'"),
    (5, 20, "bad duration '10 seconds'"),
    (6, 19, "expected a whole number"),
    (9, 13, "expected auto, raw, cri or docker"),
    (10, 15, "expected beginning or end"),
    (12, 13, "expected a mapping"),
    (16, 17, "expected info, warning or critical"),
    (17, 7, "unknown key 'enable'"),
]


def test(work):
    cfg = os.path.join(work.path, "bad.yaml")
    with open(cfg, "w") as f:
        f.write(BAD)
    p = tl.run("run", "--config", cfg, "--state-dir", work.state, timeout=30)
    check(p.returncode == 2, "exit status %d, expected 2" % p.returncode)
    err = p.stderr
    for line, col, text in EXPECT:
        pat = re.escape("%s:%d:%d: error: " % (cfg, line, col)) + ".*" + re.escape(text)
        check(re.search(pat, err), "missing %s:%d:%d %r in:\n%s" % (cfg, line, col, text, err))
    check(not os.path.exists(os.path.join(work.state, "checkpoint.json")), "something started")

    # YAML syntax error: position too.
    with open(cfg, "w") as f:
        f.write("sources:\n  - paths: [a\n  b: c\n")
    p = tl.run("run", "--config", cfg, timeout=30)
    check(p.returncode == 2 and re.search(re.escape(cfg) + r":\d+:\d+: error: ", p.stderr),
          "syntax error not positioned: %s" % p.stderr)

    # Bad flags.
    p = tl.run("run", "--start-at", "middle", timeout=30)
    check(p.returncode == 2 and "--start-at" in p.stderr, "bad flag: %s" % p.stderr)

    # A good config (the shipped example) with the shipped catalog (its overrides name catalog rules) and the
    # test's rules.
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    example = os.path.join(tl.SOURCE_DIR, "deploy", "config.example.yaml")
    p = tl.run("run", "--config", example, "--rules", os.path.join(tl.SOURCE_DIR, "rules"), "--rules", work.rules,
               "--state-dir", work.state, "--check-config", timeout=60)
    check(p.returncode == 0, "example config rejected (%d):\n%s" % (p.returncode, p.stderr))


if __name__ == "__main__":
    tl.main(test)
