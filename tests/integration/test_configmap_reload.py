"""Rules mounted from a Kubernetes ConfigMap: files are symlinks through `..data`, and an update swaps the `..data`
symlink atomically. The daemon notices the swap and reloads without a signal."""
import os
import time

import harness
from harness import check

GAMMA_RULE = r"""
id: gamma-line
title: "gamma {n}"
severity: info
events:
  gamma:
    regex: 'GAMMA (?P<n>\d+)'
key: [stream, "field:n"]
"""


def publish(rules_dir, version, files):
    """Writes a ConfigMap volume the way the kubelet does: ..<version>/ files, ..data_tmp symlink renamed to ..data."""
    vdir = os.path.join(rules_dir, "..%s" % version)
    os.makedirs(vdir)
    for name, text in files.items():
        with open(os.path.join(vdir, name), "w") as f:
            f.write(text)
    tmp = os.path.join(rules_dir, "..data_tmp")
    os.symlink("..%s" % version, tmp)
    os.rename(tmp, os.path.join(rules_dir, "..data"))
    for name in files:
        link = os.path.join(rules_dir, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..data", name), link)


def test(work):
    publish(work.rules, "2026_11_30_10_00_00.000000001", {"every.yaml": harness.EVERY_LINE_RULE})
    log = os.path.join(work.logs, "app.log")
    open(log, "w").close()
    d = harness.Daemon(work, ["--source", log]).start()
    with open(log, "a") as f:
        f.write("LINE 1 GAMMA 1\n")
    harness.wait_until(lambda: len(d.incidents()) >= 1, 20, what="line 1")
    time.sleep(0.2)
    publish(work.rules, "2026_11_30_10_05_00.000000002",
            {"every.yaml": harness.EVERY_LINE_RULE, "gamma.yaml": GAMMA_RULE})
    harness.wait_until(lambda: d.logged("rules reloaded: 2 rule(s)"), 20, what="reload after the ..data swap")
    with open(log, "a") as f:
        f.write("LINE 2 GAMMA 2\n")
    harness.wait_until(lambda: len(d.incidents()) >= 3, 20, what="gamma rule firing")
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    gammas = [i["fields"]["n"] for i in d.incidents() if i["rule"] == "gamma-line"]
    check(gammas == ["2"], "gamma incidents: %s" % gammas)


if __name__ == "__main__":
    harness.main(test)
