"""SIGHUP with a broken rule file: the new set is rejected with every error and its position logged, and the old
rules keep firing; once the file is fixed, the change itself (inotify on the rules directory) reloads them."""
import os
import re
import signal
import time

import harness
from harness import check

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
    work.write_rule("every.yaml", harness.EVERY_LINE_RULE)
    log = os.path.join(work.logs, "app.log")
    open(log, "w").close()
    d = harness.Daemon(work, ["--source", log]).start()
    with open(log, "a") as f:
        f.write("LINE 1 before\n")
    harness.wait_until(lambda: len(d.incidents()) >= 1, 20, what="line 1")

    # A broken rule file, then SIGHUP (the watcher may also notice the file; either way it is rejected).
    work.write_rule("broken.yaml", BROKEN)
    d.send(signal.SIGHUP)
    harness.wait_until(lambda: d.logged("rule reload rejected"), 20, what="the rejection")
    errors = [l["msg"] for l in d.log_lines() if l.get("level") == "error" and "broken.yaml" in l.get("msg", "")]
    check(errors, "no error naming broken.yaml was logged")
    check(all(re.search(r"broken\.yaml:\d+:\d+: error: ", e) for e in errors), "errors without positions: %s" % errors)
    check(any("broken.yaml:3:" in e for e in errors), "the bad severity (line 3) not reported: %s" % errors)
    with open(log, "a") as f:
        f.write("LINE 2 after the rejected reload\n")
    harness.wait_until(lambda: len(d.incidents()) >= 2, 20, what="line 2 with the old rules")

    # Fixed: the rule directory change reloads by itself.
    os.unlink(os.path.join(work.rules, "broken.yaml"))
    work.write_rule("beta.yaml", BETA_RULE)
    harness.wait_until(lambda: d.logged("rules reloaded: 2 rule(s)"), 20, what="the automatic reload")
    with open(log, "a") as f:
        f.write("LINE 3 BETA 3 both rules\n")
    harness.wait_until(lambda: len(d.incidents()) >= 4, 20, what="both rules firing")
    rc = d.stop()
    check(rc == 0, "exit status %s" % rc)
    incs = d.incidents()
    harness.assert_exactly_once(incs, [1, 2, 3])
    check([i["fields"]["n"] for i in incs if i["rule"] == "beta-line"] == ["3"], "beta rule after reload")


if __name__ == "__main__":
    harness.main(test)
