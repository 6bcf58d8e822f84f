#!/usr/bin/env python3
"""Failure stories no rule knows, on the real corpus: `faultline scan` over every file of tests/corpus/real. Every
healthy or benign log raises no unclassified incident; every failure excerpt raises a typed incident (a rule that is
not a cascade) or exactly one `unclassified-failure`, whose story holds the terminal line its index row names (the
incident's own terminal line is the root cause: in a chain, the first exception, which the row may not name). An
excerpt whose row expects a cascade by its id (worker died, scheduler exception, ...) and that holds no cause - the
consequence's own line only, no exception of its own - passes with that cascade alone: it is the incident that pages.
Also `faultline fingerprints` on the same files.

`--table` prints the per-file result table of tests/corpus/real/COVERAGE.md instead of checking."""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

CORPUS = os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real")
CASCADES = {"engine-dead", "engine-init-failed", "ray-worker-died", "scheduler-exception", "server-down",
            "worker-died"}
UNCLASSIFIED = "unclassified-failure"

# Failure excerpts that raise neither a typed nor an unclassified incident today, and why. The test fails when one
# of them starts to pass (remove it from here) as when any other file fails.
#
# How the former gaps were closed:
# - Excerpts that show a failure without its head or exception line are stories now (docs/fingerprints.md, "Story
#   anchors"): Python frames logged at ERROR with no traceback open (fmha_unsupported_arch__vllm-pr31740-trace,
#   cutlass_scaled_mm__vllm-23253, model_load_error__vllm-ascend-955-partial), and the Go runtime's crash dump, whose
#   frame lines carry fp=/sp=/pc= only as the runtime dies (go_panic__ollama-10977-partial, -13171-partial; their rows
#   now name a line of the excerpt, not the exit line of the title that is not in it).
# - Precursor-only excerpts show no failure: their rows say NONE (negative controls), so nothing may fire on them
#   (fmha_unsupported_arch__trtllm-1515-sysinfo, cuda_oom__tensorrtllm-backend-456-precursor,
#   cuda_oom__sglang-12496-precursor).
# - A cascade whose cause is not in the excerpt is that file's typed incident when its row names the cascade
#   (engine_dead__pytorch-174081-ci: engine-dead, ray_worker_died__vllm-13535: ray-worker-died).
# - A failure told in one plain ERROR line that no anchor knows (a story anchor on any ERROR line would page on every
#   logged error) got a typed rule: the TGI router that cannot reach its model server is engine-dead
#   (rust_panic__tgi-238-client).
KNOWN_GAPS = {}


def index_rows():
    with open(os.path.join(CORPUS, "index.tsv"), newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def classify(row, incs):
    """(class, verdict, detail) of one file's incidents."""
    expected = row["expected_incident"]
    negative = expected.startswith("NONE")
    typed = sorted({i["rule"] for i in incs if i["rule"] not in CASCADES and i["rule"] != UNCLASSIFIED})
    cascades = sorted({i["rule"] for i in incs if i["rule"] in CASCADES})
    unclassified = [i for i in incs if i["rule"] == UNCLASSIFIED]
    raised = ", ".join(typed + cascades + ([f"{UNCLASSIFIED} x{len(unclassified)}"] if unclassified else [])) or "nothing"
    if negative:
        return raised, ("ok (negative)" if not unclassified else "FALSE ALARM"), unclassified
    if typed and not unclassified:
        return raised, "ok (typed)", unclassified
    if expected in CASCADES and expected in cascades and not unclassified:
        # The row names the cascade: its cause is not in the excerpt, the cascade is the file's typed incident.
        return raised, "ok (cascade)", unclassified
    if typed and unclassified:
        return raised, "typed + unclassified", unclassified
    if len(unclassified) == 1:
        if expected.startswith(UNCLASSIFIED + ":"):
            want = expected[len(UNCLASSIFIED) + 1:].strip()
            head = want.split("...")[0].strip()[:40]
            story = [e["text"] for e in unclassified[0]["evidence"]]
            if not any(head in t for t in story):
                return raised, "wrong story", unclassified
        return raised, "ok (unclassified)", unclassified
    if len(unclassified) > 1:
        return raised, "MORE THAN ONE", unclassified
    if cascades and expected.strip() in cascades:
        return raised, "ok (cascade, no cause in the excerpt)", unclassified
    return raised, "MISS (silent)" if not cascades else "cascade only", unclassified


def main():
    rows = [r for r in index_rows() if os.path.exists(os.path.join(CORPUS, r["filename"]))]
    table = "--table" in sys.argv
    tally = tl.Tally()
    results = []
    for row in rows:
        path = os.path.join(CORPUS, row["filename"])
        rc, incs, p = tl.scan_incidents(path)
        if rc not in (0, 1):
            tally.check(False, f"{row['filename']}: scan exit status {rc}: {p.stderr.decode()[-400:]}")
            continue
        raised, verdict, unclassified = classify(row, incs)
        terminal = ""
        for inc in unclassified[:1]:
            terminal = next((e["text"] for e in inc["evidence"] if e["event"] == "terminal"), "")
        results.append((row["filename"], row["expected_incident"], raised, verdict, terminal))
        if table:
            continue
        ok = verdict.startswith("ok") or verdict == "typed + unclassified"
        if row["filename"] in KNOWN_GAPS:
            tally.check(not ok, f"{row['filename']}: known gap ({KNOWN_GAPS[row['filename']]}) now passes: "
                                f"remove it from KNOWN_GAPS")
        else:
            tally.check(ok, f"{row['filename']}: {verdict}: raised {raised}; terminal {terminal[:160]!r}; "
                            f"expected {row['expected_incident'][:120]!r}")
        for inc in unclassified:
            tally.check(len(inc.get("fingerprint", "")) == 16 and "template" in inc,
                        f"{row['filename']}: the unclassified incident carries its fingerprint and template")

    if table:
        counts = {}
        for r in results:
            counts[r[3]] = counts.get(r[3], 0) + 1
        print("| verdict | files |\n| --- | --- |")
        for k in sorted(counts):
            print(f"| {k} | {counts[k]} |")
        print()
        print("| file | expected | raised | verdict | unclassified terminal line |\n| --- | --- | --- | --- | --- |")
        for name, expected, raised, verdict, terminal in results:
            exp = expected if len(expected) <= 90 else expected[:87] + "..."
            term = terminal if len(terminal) <= 90 else terminal[:87] + "..."
            cell = lambda s: s.replace("|", "\\|")  # noqa: E731
            print(f"| `{name}` | {cell(exp)} | {cell(raised)} | {verdict} | {cell(term)} |")
        return

    # The inventory: every failure file's story is listed, claimed by its rule or not.
    failures = [os.path.join(CORPUS, r["filename"]) for r in rows[:20]]
    p = tl.run("fingerprints", "--json", *failures, timeout=300)
    tally.check(p.returncode in (0, 1), f"fingerprints exit status {p.returncode}: {p.stderr[-300:]}")
    entries = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    tally.check(entries and all(len(e["fingerprint"]) == 16 and e["count"] >= 1 and e["example"] for e in entries),
                f"fingerprints lists entries with a fingerprint, a count and an example ({len(entries)})")
    tally.check(any(e["claimed_by"] for e in entries) and any(not e["claimed_by"] for e in entries),
                "fingerprints names the rule that claims a story, and lists unclaimed ones")
    tally.finish()


main()
