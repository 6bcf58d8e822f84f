#!/usr/bin/env python3
"""`faultline rules draft` on three real corpus failures that no rule of the catalog knows, one per way of naming the
story: FILE:LINE (the unclassified incident's terminal line), a fingerprint (looked for in the file), and an incident
id (read from the state dir of a real `faultline run` that raised it). Each draft passes `faultline check` and
`faultline test` unchanged, and with it the source file raises the drafted typed incident instead of
`unclassified-failure`."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

CORPUS = os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real")
CATALOG = os.path.join(tl.SOURCE_DIR, "rules")
UNCLASSIFIED = "unclassified-failure"
SOURCES = {
    "file:line": "port_in_use__vllm-11617.log",
    "fingerprint": "rust_panic__femtogpt-23.log",
    "incident": "disk_full__llamafactory-275.log",
}


def unclassified(path, *rules):
    args = []
    for r in rules:
        args += ["--rules", r]
    rc, incs, p = tl.scan_incidents(*args, path)
    check(rc in (0, 1), "scan %s: exit %s: %s" % (path, rc, p.stderr.decode()[-300:]))
    return [i for i in incs if i["rule"] == UNCLASSIFIED], incs


def terminal_line(inc):
    return next(e["line"] for e in inc["evidence"] if e["event"] == "terminal")


def incident_from_daemon(work, path):
    """The unclassified incident a real daemon raises on `path`, read from its state dir after it stopped."""
    logs = os.path.join(work.path, "daemon-logs")
    os.makedirs(logs)
    source = os.path.join(logs, os.path.basename(path))
    shutil.copy(path, source)
    d = tl.Daemon(work, ["--source", source, "--start-at", "beginning"], name="draft-daemon", rules=CATALOG).start()
    tl.wait_until(lambda: any(i["rule"] == UNCLASSIFIED for i in d.incidents()), 30,
                  what="the unclassified incident of %s" % os.path.basename(path), alive=d)
    d.stop_ok()
    incs = [i for i in d.incidents() if i["rule"] == UNCLASSIFIED]
    return incs[0]["id"], source


def test(work):
    drafted = []
    for how, name in SOURCES.items():
        path = os.path.join(CORPUS, name)
        before, _ = unclassified(path)
        check(len(before) == 1, "%s raises one unclassified incident without a draft: %d" % (name, len(before)))
        out = os.path.join(work.path, "draft-%s.yaml" % how.replace(":", "-"))
        if how == "file:line":
            p = tl.run("rules", "draft", "--from", "%s:%d" % (path, terminal_line(before[0])), "--output", out)
        elif how == "fingerprint":
            p = tl.run("rules", "draft", "--from", before[0]["fingerprint"], "--output", out, path)
        else:
            incident_id, path = incident_from_daemon(work, path)
            p = tl.run("rules", "draft", "--from", incident_id, "--state-dir", work.state, "--output", out)
        check(p.returncode == 0, "draft from %s of %s: exit %d: %s" % (how, name, p.returncode, p.stderr[-500:]))
        text = open(out, encoding="utf-8").read()
        check("DECIDE" in text and "tests:" in text and "reset_on:" in text and "lifetime:" in text,
              "the draft from %s says what to decide and has a test, reset and lifetime:\n%s" % (how, text))
        rule_id = next(l.split()[1] for l in text.splitlines() if l.startswith("id: "))

        c = tl.run("check", out)
        check(c.returncode == 0, "faultline check %s: %s%s\n%s" % (how, c.stdout[-400:], c.stderr[-400:], text))
        t = tl.run("test", out)
        check(t.returncode == 0 and "1 passed, 0 failed" in t.stdout,
              "faultline test %s: %s%s\n%s" % (how, t.stdout[-600:], t.stderr[-400:], text))

        after, incs = unclassified(path, CATALOG, out)
        typed = [i for i in incs if i["rule"] == rule_id]
        check(not after and len(typed) == 1,
              "with the draft from %s, %s raises %s instead of %s: %s" % (how, name, rule_id, UNCLASSIFIED,
                                                                         [i["rule"] for i in incs]))
        drafted.append(rule_id)
    check(len(set(drafted)) == 3, "three different drafts: %s" % drafted)

    # A fingerprint that is not in the files, and a FILE:LINE past the end: exit 1 with a reason.
    p = tl.run("rules", "draft", "--from", "0123456789abcdef", os.path.join(CORPUS, SOURCES["fingerprint"]))
    check(p.returncode == 1 and "no story" in p.stderr, "unknown fingerprint: %d %s" % (p.returncode, p.stderr))
    p = tl.run("rules", "draft", "--from", os.path.join(CORPUS, SOURCES["fingerprint"]) + ":999999")
    check(p.returncode == 1, "a line past the end: %d %s" % (p.returncode, p.stderr))


tl.main(test)
