#!/usr/bin/env python3
"""The shipped Prometheus alert rules are valid and pass their unit tests: `promtool check rules` and
`promtool test rules deploy/prometheus/alerts_test.yaml` (which also covers the optional incident-rate rule)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402


def test(work):
    promtool = tl.need_tool("promtool")
    d = os.path.join(tl.SOURCE_DIR, "deploy", "prometheus")
    for args in (["check", "rules", "alerts.yaml", os.path.join("optional", "incident-rate.yaml")],
                 ["test", "rules", "alerts_test.yaml"]):
        r = subprocess.run([promtool] + args, cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            raise tl.Failure("promtool %s:\n%s%s" % (" ".join(args), r.stdout, r.stderr))


if __name__ == "__main__":
    tl.main(test)
