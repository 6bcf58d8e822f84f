"""Writing a rule beside the catalog, as its author meets it:
- `test --rule ID PATH` runs that rule's tests alone, with the shipped catalog loaded beside PATH, so an expectation
  on a catalog rule holds; without the catalog the failure says the rule is not loaded; an unknown ID says what was
  meant; a rule without tests fails;
- `rules show ID` shows where the rule is defined, its patterns, the fields it captures, its texts and its tests;
- `check` rejects a placeholder that names no field of the rule, and a bare "?" default, at file:line:column;
- `scan --explain` says when an event's level filter dropped a line its pattern matched, and when a matching line
  did not count because of the rule's tolerance: out of its window, arrived early in a rule without one, or optional
  evidence that came after the hold for it ended."""
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.19 GiB of which 1.02 GiB is free.")

MINE = r"""
id: my-wrapper
title: "My wrapper saw a failure"
severity: warning
summary: "The wrapper printed MYFAIL[[ with code {code}]]."
events:
  failed:
    regex: 'MYFAIL(?: code=(?P<code>\d+))?'
tests:
  - name: the wrapper line after an OOM
    lines: |
      %s
      MYFAIL code=3
    expect:
      - fields: {code: "3"}
      - rule: cuda-out-of-memory
        severity: critical
""" % OOM

# A test case that only an edited copy of the catalog's OOM rule has (it holds for the shipped rule too).
EDITED_CASE = """  - name: edited copy only
    lines: |
      %s
    expect:
      - severity: critical
""" % OOM

UNTESTED = """
id: my-untested
title: "Untested"
severity: info
events: {e: 'UNTESTED'}
"""


def run(*args):
    p = tl.run(*args, timeout=120)
    return p.returncode, p.stdout + p.stderr


def test(work):
    mine = os.path.join(work.path, "mine")
    os.makedirs(mine)
    with open(os.path.join(mine, "my-wrapper.yaml"), "w") as f:
        f.write(MINE)

    # Alone, the catalog rule the test speaks about is missing, and the failure says so.
    rc, out = run("test", mine)
    check(rc == 1, "test without the catalog: exit %d\n%s" % (rc, out))
    check("rule cuda-out-of-memory is not loaded" in out, "no word on the rule not loaded:\n%s" % out)

    # --rule: that rule's tests only, the catalog loaded beside it.
    rc, out = run("test", "--rule", "my-wrapper", "--verbose", mine)
    check(rc == 0, "test --rule: exit %d\n%s" % (rc, out))
    check(out.rstrip().endswith("1 passed, 0 failed"), "test --rule ran other tests:\n%s" % out[-2000:])
    # With no PATH it is the catalog's own rule, and the count is that rule's tests.
    rc, out = run("test", "--rule", "cuda-out-of-memory")
    check(rc == 0 and " passed, 0 failed" in out, "test --rule on a catalog rule: exit %d\n%s" % (rc, out[-2000:]))
    passed = int(out.strip().splitlines()[-1].split()[0])
    check(5 < passed < 60, "test --rule cuda-out-of-memory ran %d tests" % passed)

    # An edited copy of the catalog (a working copy) with --rule: its rules replace the shipped ones of the same ids
    # (no duplicate id), and the edited rule's own tests run (a case only the copy has).
    copy = os.path.join(work.path, "copy")
    shutil.copytree(os.path.join(tl.SOURCE_DIR, "rules"), os.path.join(copy, "rules"))
    os.makedirs(os.path.join(copy, "tests", "corpus"))
    os.symlink(os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real"), os.path.join(copy, "tests", "corpus", "real"))
    edited_rule = os.path.join(copy, "rules", "memory", "cuda-out-of-memory.yaml")
    shipped = open(edited_rule).read()
    check("\ntests:\n" in shipped, "the shipped OOM rule has no tests block")
    with open(edited_rule, "w") as f:
        f.write(shipped.replace("\ntests:\n", "\ntests:\n" + EDITED_CASE, 1))
    rc, out = run("test", "--rule", "cuda-out-of-memory", "--verbose", os.path.join(copy, "rules"))
    check(rc == 0 and "duplicate" not in out, "test --rule on an edited catalog: exit %d\n%s" % (rc, out[-3000:]))
    check("ok   cuda-out-of-memory: edited copy only" in out, "the copy's own test did not run:\n%s" % out[-3000:])
    # One edited rule file alone beside the shipped catalog: the shipped file of that id is left out.
    rc, out = run("test", "--rule", "cuda-out-of-memory", "--verbose", edited_rule)
    check(rc == 0 and "ok   cuda-out-of-memory: edited copy only" in out,
          "an edited rule file alone: exit %d\n%s" % (rc, out[-3000:]))

    rc, out = run("test", "--rule", "my-wraper", mine)
    check(rc == 2 and "no rule 'my-wraper'" in out and "did you mean 'my-wrapper'" in out,
          "unknown --rule: exit %d\n%s" % (rc, out))
    with open(os.path.join(mine, "my-untested.yaml"), "w") as f:
        f.write(UNTESTED)
    rc, out = run("test", "--rule", "my-untested", mine)
    check(rc == 1 and "the rule has no tests" in out, "a rule without tests: exit %d\n%s" % (rc, out))

    # rules show: source, patterns, fields, texts as written, tests.
    rc, out = run("rules", "show", "cuda-out-of-memory")
    check(rc == 0, "rules show: exit %d\n%s" % (rc, out))
    for want in ("rules/memory/cuda-out-of-memory.yaml:", "severity: critical", "regex: ", "oom_torch",
                 "captures: error, requested", "fields: error, free, gpu_index, phase, requested", "summary:",
                 "[[ on GPU {gpu_index}]]", "tests: "):
        check(want in out, "rules show: %r missing:\n%s" % (want, out))
    rc, out = run("rules", "show", "--rules", mine, "my-wrapper")
    check(rc == 0 and "fields: code" in out and "tests: 1" in out, "rules show --rules: %d\n%s" % (rc, out))
    rc, out = run("rules", "show", "cuda-out-of-memori")
    check(rc == 2 and "did you mean 'cuda-out-of-memory'" in out, "rules show unknown id: %d\n%s" % (rc, out))

    # check: a placeholder naming no field, a bare "?" default, each at its own line and column.
    bad = work.file("bad.yaml", 'id: bad-text\ntitle: "Thing on {gpuu|this GPU}"\nseverity: info\nsummary: >\n'
                    '  Failed on\n  GPU {gpu|?}.\nevents:\n  e: {regex: \'GPU (?P<gpu>\\d+) failed\'}\n')
    rc, out = run("check", bad)
    check(rc == 1, "check of a bad placeholder: exit %d\n%s" % (rc, out))
    check(bad + ":2:18: error: title: placeholder {gpuu|this GPU} names no field of rule 'bad-text' "
          "(its fields: gpu)" in out, "unknown placeholder not reported at 2:18:\n%s" % out)
    check(bad + ":6:7: error: summary: placeholder {gpu|?} would print '?'" in out,
          "bare '?' default not reported at 6:7:\n%s" % out)

    # scan --explain: a line the pattern matched, dropped by the event's level filter, is said.
    levelled = work.file("levelled.yaml", "id: levelled\ntitle: t\nseverity: warning\nevents:\n  e:\n"
                         "    regex: 'ValueError: boom'\n    level: [error]\n")
    log = work.file("app.log", "(EngineCore pid=1) INFO 12-01 10:00:31 [core.py:708] ValueError: boom\n")
    rc, out = run("scan", "--rules", levelled, "--explain", log)
    check(rc == 0, "scan: exit %d (nothing should fire)\n%s" % (rc, out))
    check("line 1: levelled/e matched, dropped by its level filter (line level: info; the event takes: error)" in out,
          "explain says nothing of the level filter:\n%s" % out)

    # scan --explain and tolerance: each matching line that does not count is named, with the rule and why.
    tolerant = work.file("tolerant.yaml", "id: tolerant\ntitle: t\nseverity: warning\nevents:\n"
                         "  a: {regex: 'STEP-A'}\n  ctx: {regex: 'CONTEXT'}\n  b: {regex: 'STEP-B'}\n"
                         "sequence:\n  - event: a\n  - {event: ctx, optional: true}\n  - event: b\n"
                         "tolerance: {lines: 3}\n")
    strict = work.file("strict.yaml", "id: strict\ntitle: s\nseverity: warning\nevents:\n"
                       "  a: {regex: 'STRICT-A'}\n  b: {regex: 'STRICT-B'}\nsequence:\n  - event: a\n  - event: b\n")
    lines = ["STEP-B too early"] + ["filler"] * 5 + ["STEP-A", "STEP-B", "filler", "filler", "filler", "filler",
                                                     "CONTEXT too late", "STRICT-B first", "STRICT-A second"]
    log = work.file("order.log", "\n".join(lines) + "\n")
    rc, out = run("scan", "--rules", tolerant, "--rules", strict, "--explain", log)
    check(rc == 1, "scan: exit %d (tolerant fires)\n%s" % (rc, out))
    for want in (
            "line 1: tolerant/b matched, not counted: 6 lines and 0s from line 7, where step 1 (a) completed, is out "
            "of the rule's tolerance (lines: 3, time: any)",
            "line 13: tolerant/ctx matched, not in incident ",
            "it came after the rule's tolerance (3 lines) had passed, and the incident went out without it",
            "line 14: strict/b matched, not counted: it is step 2 and arrived before step 1 (a) completed in [",
            "the rule has no tolerance, so an early hit is not taken later"):
        check(want in out, "explain does not say %r:\n%s" % (want, out))
    check(out.count("line 1: tolerant/b matched") == 1, "the out-of-window line is named more than once:\n%s" % out)
    # An early hit that the next one leaves more lines behind than the tolerance can never be taken: it is forgotten
    # then, and said so once.
    reach = work.file("reach.log", "STEP-B early\nfiller\nfiller\nfiller\nfiller\nSTEP-B again\nSTEP-A\n")
    rc, out = run("scan", "--rules", tolerant, "--explain", reach)
    check(rc == 1, "scan: exit %d (the second early hit pairs)\n%s" % (rc, out))
    check(out.count("line 1: tolerant/b matched, not counted: it waited in [") == 1 and
          "an earlier step, which did not complete within the rule's tolerance (lines: 3, time: any)" in out and
          "line 6: tolerant/b matched, not counted" not in out,
          "explain does not say once that the first early hit went out of reach:\n%s" % out)
    # More early hits than are remembered for the window (a tolerance in time only): the oldest are dropped, and
    # said so.
    patient = work.file("patient.yaml", "id: patient\ntitle: p\nseverity: warning\nevents:\n"
                        "  a: {regex: 'STEP-A'}\n  b: {regex: 'STEP-B'}\nsequence:\n  - event: a\n  - event: b\n"
                        "tolerance: {time: 1h}\n")
    crowded = work.file("crowded.log", "".join("STEP-B early %d\n" % i for i in range(34)) + "STEP-A\n")
    rc, out = run("scan", "--rules", patient, "--explain", crowded)
    check("line 1: patient/b matched, dropped: more than 32 early hits waited in [" in out and
          "line 3: patient/b matched, dropped" not in out,
          "explain does not say which early hits were dropped:\n%s" % out)


if __name__ == "__main__":
    tl.main(test)
