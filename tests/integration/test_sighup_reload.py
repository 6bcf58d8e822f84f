"""SIGHUP with a broken rule file: the new set is rejected with every error and its position logged, and the old
rules keep firing; once the file is fixed, the change itself (inotify on the rules directory) reloads them."""
import os
import sys
import re
import signal

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

BETA_RULE = r"""
id: beta-line
title: "beta {n}"
severity: critical
events:
  beta:
    regex: 'BETA (?P<n>\d+)'
key: [stream, "field:n"]
"""

BROKEN = """id: broken-rule
title: broken
severity: sometimes
events:
  bad:
    regex: 'unclosed ( group'
"""


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    d = tl.follow(work)
    d.feed("LINE 1 before", expect=1, what="line 1")

    # A broken rule file, then SIGHUP (the watcher may also notice the file; either way it is rejected).
    work.write_rule("broken.yaml", BROKEN)
    d.send(signal.SIGHUP)
    tl.wait_until(lambda: d.logged("rule reload rejected"), 20, what="the rejection", alive=d)
    errors = [l["msg"] for l in d.log_lines() if l.get("level") == "error" and "broken.yaml" in l.get("msg", "")]
    check(errors, "no error naming broken.yaml was logged")
    check(all(re.search(r"broken\.yaml:\d+:\d+: error: ", e) for e in errors), "errors without positions: %s" % errors)
    check(any("broken.yaml:3:" in e for e in errors), "the bad severity (line 3) not reported: %s" % errors)
    d.feed("LINE 2 after the rejected reload", expect=2, what="line 2 with the old rules")

    # Fixed: the rule directory change reloads by itself.
    os.unlink(os.path.join(work.rules, "broken.yaml"))
    work.write_rule("beta.yaml", BETA_RULE)
    d.wait_reloaded(2, what="the automatic reload")
    d.feed("LINE 3 BETA 3 both rules", expect=4, what="both rules firing")
    d.stop_ok()
    incs = d.incidents()
    tl.assert_exactly_once(incs, [1, 2, 3])
    check([i["fields"]["n"] for i in incs if i["rule"] == "beta-line"] == ["3"], "beta rule after reload")


if __name__ == "__main__":
    tl.main(test)
