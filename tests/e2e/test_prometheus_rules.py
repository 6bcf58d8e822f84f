#!/usr/bin/env python3
"""The shipped Prometheus alert rules are valid and pass their unit tests: `promtool check rules` and
`promtool test rules deploy/prometheus/alerts_test.yaml` (which also covers the optional incident-rate rule)."""
import os
import subprocess

from e2e_common import SOURCE_DIR, Failure, main, need_tool


def test(work, stoppers):
    promtool = need_tool("promtool")
    d = os.path.join(SOURCE_DIR, "deploy", "prometheus")
    for args in (["check", "rules", "alerts.yaml", os.path.join("optional", "incident-rate.yaml")],
                 ["test", "rules", "alerts_test.yaml"]):
        r = subprocess.run([promtool] + args, cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure("promtool %s:\n%s%s" % (" ".join(args), r.stdout, r.stderr))


if __name__ == "__main__":
    main(test)
