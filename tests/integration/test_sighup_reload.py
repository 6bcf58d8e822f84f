"""SIGHUP with a broken rule file: the new set is rejected with every error and its position logged, and the old
rules keep firing; once the file is fixed, the change itself (inotify on the rules directory) reloads them. A rule
file edited in place is read again (the daemon keeps parsed rule files in its cache, keyed by their bytes), and the
rules' tests are not the daemon's: a broken test does not keep the rule from running."""
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

# beta-line edited: another word, and a tests block that `faultline test` would reject (a key no test has).
GAMMA_RULE = BETA_RULE.replace("BETA", "GAMMA") + """
tests:
  - name: not the daemon's to check
    lines: "GAMMA 1"
    no_such_key: 1
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
    cache = os.path.join(d.state, "cache")
    check(any(n.startswith("parsed-") for n in os.listdir(cache)), "no parsed rule files kept in %s" % cache)

    # Edited in place (same name, other bytes): the new text is what runs, not the parsed copy of the old one.
    reloads = sum("rules reloaded" in l.get("msg", "") for l in d.log_lines())
    tmp = os.path.join(work.path, "beta.yaml.new")  # written beside the rules, then renamed into place at once
    with open(tmp, "w") as f:
        f.write(GAMMA_RULE)
    os.replace(tmp, os.path.join(work.rules, "beta.yaml"))
    tl.wait_until(lambda: sum("rules reloaded" in l.get("msg", "") for l in d.log_lines()) > reloads, 20,
                  what="the reload of the edited file", alive=d)
    d.feed("LINE 4 BETA 4 old word", expect=5, what="line 4 (every-line only)")
    d.feed("LINE 5 GAMMA 5 new word", expect=7, what="line 5 (both rules)")
    d.stop_ok()
    incs = d.incidents()
    tl.assert_exactly_once(incs, [1, 2, 3, 4, 5])
    check([i["fields"]["n"] for i in incs if i["rule"] == "beta-line"] == ["3", "5"], "beta rule after reloads: %s"
          % [i["fields"]["n"] for i in incs if i["rule"] == "beta-line"])


if __name__ == "__main__":
    tl.main(test)
