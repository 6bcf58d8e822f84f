"""Rules mounted from a Kubernetes ConfigMap: files are symlinks through `..data`, and an update swaps the `..data`
symlink atomically. The daemon notices the swap and reloads without a signal."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

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
    publish(work.rules, "2026_11_30_10_00_00.000000001", {"every.yaml": tl.EVERY_LINE_RULE})
    d = tl.follow(work)
    d.feed("LINE 1 GAMMA 1", expect=1, what="line 1")
    time.sleep(0.2)  # the swap comes as a later change of the volume, as the kubelet's would
    publish(work.rules, "2026_11_30_10_05_00.000000002",
            {"every.yaml": tl.EVERY_LINE_RULE, "gamma.yaml": GAMMA_RULE})
    d.wait_reloaded(2, what="reload after the ..data swap")
    d.feed("LINE 2 GAMMA 2", expect=3, what="gamma rule firing")
    d.stop_ok()
    gammas = [i["fields"]["n"] for i in d.incidents() if i["rule"] == "gamma-line"]
    check(gammas == ["2"], "gamma incidents: %s" % gammas)


if __name__ == "__main__":
    tl.main(test)
