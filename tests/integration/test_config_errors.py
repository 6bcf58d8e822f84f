"""A config with mistakes: every one is reported with file:line:column (1-based) and nothing starts (exit 2).
A good config passes --check-config."""
import os
import re
import subprocess

import harness
from harness import check

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
    p = subprocess.run([harness.BIN, "run", "--config", cfg, "--state-dir", work.state], capture_output=True,
                       text=True, timeout=30)
    check(p.returncode == 2, "exit status %d, expected 2" % p.returncode)
    err = p.stderr
    for line, col, text in EXPECT:
        pat = re.escape("%s:%d:%d: error: " % (cfg, line, col)) + ".*" + re.escape(text)
        check(re.search(pat, err), "missing %s:%d:%d %r in:\n%s" % (cfg, line, col, text, err))
    check(not os.path.exists(os.path.join(work.state, "checkpoint.json")), "something started")

    # YAML syntax error: position too.
    with open(cfg, "w") as f:
        f.write("sources:\n  - paths: [a\n  b: c\n")
    p = subprocess.run([harness.BIN, "run", "--config", cfg], capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and re.search(re.escape(cfg) + r":\d+:\d+: error: ", p.stderr),
          "syntax error not positioned: %s" % p.stderr)

    # Bad flags.
    p = subprocess.run([harness.BIN, "run", "--start-at", "middle"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "--start-at" in p.stderr, "bad flag: %s" % p.stderr)

    # A good config (the shipped example) with the test's rules.
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    example = os.path.join(harness.SOURCE_DIR, "deploy", "config.example.yaml")
    p = subprocess.run([harness.BIN, "run", "--config", example, "--rules", work.rules, "--state-dir", work.state,
                        "--check-config"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 0, "example config rejected (%d):\n%s" % (p.returncode, p.stderr))


if __name__ == "__main__":
    harness.main(test)
