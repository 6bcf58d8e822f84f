#!/usr/bin/env python3
"""faultline's benchmark suite: one command, every figure of issue 6, written to bench/RESULTS.md.

  bench/run_all.py                  # the full suite (~25-40 min on the 2-core bench machine; --soak 300 included)
  bench/run_all.py --smoke          # seconds: harness + per-pattern agreement of every tool; asserts no time
  bench/run_all.py --sections scan,peers --runs 5     # some sections only (others keep their last figures)
  bench/run_all.py --soak 1800      # the 30-minute memory soak

Sections (each figure the median of --runs runs, min-max in brackets; ratios are taken inside each run, then the
median of the per-run ratios is shown; wall-clock and CPU time are both reported -- the machine is shared; where a
run compares tools (scan, corpora, parallel) each is run 3 times in turn and the fastest kept, since the machine
switches between two speeds):

  check     per-pattern matching-line counts of faultline (fl_count, the Scanner of faultline_core), the raw limit
            (hs_limit per-line), GNU grep, ripgrep, mtail and SEC on every rule set; they must agree
  scan      `faultline scan -j 1` (full catalog, --lines corpus, cached database) vs hs_limit's buffered scan (the
            raw Hyperscan limit) and ripgrep; a decode / scan / correlate breakdown (fl_count)
  corpora   per corpus (A: gen_corpus.py; B: gen_corpus_b.py raw, CRI- and docker-wrapped), at 1M and --lines lines:
            raw limit, in-memory pipeline, `scan -j 1` and `scan` on every core
  parallel  `scan -j N` for N = 1, 2, 4, 8 (up to the cores here) on corpus A and B, --lines lines
  peers     `faultline scan` vs mtail --one_shot, SEC --notail and grep -E -f on the --peer-lines corpus
  scaling   per-byte cost of `faultline scan` at 20 / 100 / 186 / 1000 patterns
  follow    `faultline run` following a file appended as fast as possible: lines/s with nothing lost
  latency   append of a failure line -> its incident at a webhook receiver, at --rate lines/s
  memory    RSS with the full catalog and 100 followed files, steady state and growth over --soak seconds
  idle      CPU of the idle daemon (100 files, nothing appended) over --idle seconds
  startup   start-up to /readyz 200, cold (compile) vs cached database; `scan --cache` cold vs warm
  detector  `scan -j 1` with and without the fingerprint detector on corpus A and B (bench/detector_cost.py; its own
            section of RESULTS.md, "The fingerprint detector")

Binaries: --faultline, --fl-count, --hs-limit, or built here (Release, bench/out/build-rel). Peers: mtail, sec, rg,
grep from Debian (bench/packages.txt). Exit status: 0 all tools agree and every harness step worked, 1 otherwise;
77 (--smoke) when a peer is not installed. Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from suite_common import *  # noqa: F401,F403,E402
from suite_common import tl, peers  # noqa: F401,E402
from suite_sections import *  # noqa: F401,F403,E402
from suite_daemon import *  # noqa: F401,F403,E402
from suite_render import render, write_section  # noqa: E402
import detector_cost  # noqa: E402


def section_detector(ctx: dict) -> dict:
    """The detector's cost (bench/detector_cost.py), written to its own section of RESULTS.md unless smoke."""
    lines = min(ctx["corpus_lines"], 1_000_000)
    res = detector_cost.measure(ctx["bin"]["faultline"], ctx["out"], lines, ctx["runs"], log=log)
    text, ok = detector_cost.render(res, " (from run_all.py)", ctx["bin"]["faultline"])
    if not ctx.get("smoke"):
        detector_cost.write_results(text, os.path.join(HERE, "RESULTS.md"))
    if not ok:
        raise RuntimeError("the detector's cost is over its target (bench/RESULTS.md)")
    return res

# -------------------------------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="seconds: correctness of the harness and of the counts only")
    ap.add_argument("--sections", help="comma list (default: all; smoke: check,follow,latency)")
    ap.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    ap.add_argument("--lines", type=int, default=5_000_000, help="scan corpus lines (default 5M)")
    ap.add_argument("--peer-lines", type=int, default=50_000, help="mtail/SEC/grep timing corpus lines (default 50k)")
    ap.add_argument("--scaling-lines", type=int, default=1_000_000, help="pattern-count corpus lines (default 1M)")
    ap.add_argument("--check-lines", type=int, default=100_000, help="agreement corpus lines (default 100k)")
    ap.add_argument("--peer-check-lines", type=int, default=10_000, help="agreement lines for mtail/SEC (default 10k)")
    ap.add_argument("--follow-lines", type=int, help="lines appended in the follow test (default: --lines)")
    ap.add_argument("--rate", type=int, default=10_000, help="background lines/s of the latency test (default 10k)")
    ap.add_argument("--latency-seconds", type=float, default=60, help="latency test duration (default 60)")
    ap.add_argument("--probes-per-s", type=int, default=10)
    ap.add_argument("--soak", type=int, default=300, help="memory soak seconds (default 300; 1800 for the long run)")
    ap.add_argument("--soak-rate", type=int, default=10_000, help="lines/s into the 100 files during the soak")
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--sample-every", type=int, default=5)
    ap.add_argument("--idle", type=int, default=60, help="idle CPU window seconds (default 60)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--faultline"), ap.add_argument("--fl-count"), ap.add_argument("--hs-limit")
    ap.add_argument("--build-dir", default=os.path.join(HERE, "out", "build-rel"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="work directory (corpora, rule sets, raw data)")
    ap.add_argument("--results", help="markdown file (default bench/RESULTS.md; smoke: OUT/RESULTS-smoke.md)")
    ap.add_argument("--max-wait", type=float, help="seconds to wait for a quiet core before a measurement (default 20; smoke 0)")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--render-only", metavar="RAW_JSON")
    a = ap.parse_args()

    if a.render_only:
        raw = json.load(open(a.render_only))
        text = render(raw)
        print(text)
        if not a.no_write:
            write_section(a.results or os.path.join(HERE, "RESULTS.md"), text)
        return 0

    if a.smoke:
        a.runs = 1
        a.lines = 20_000
        a.check_lines = 20_000
        a.peer_check_lines = 2_000
        a.peer_lines = 2_000
        a.scaling_lines = 20_000
        a.latency_seconds = 3
        a.rate = 2000
        a.probes_per_s = 5
        a.soak = 5
        a.idle = 2
        a.sample_every = 1
        a.files = 5
        if not a.sections:
            a.sections = "check,follow,latency"
        if a.sets == ",".join(SETS):
            a.sets = "cat-20,catalog"
    a.max_wait = a.max_wait if a.max_wait is not None else (0.0 if a.smoke else 20.0)
    sections = a.sections.split(",") if a.sections else list(ALL_SECTIONS)
    for s in sections:
        if s not in ALL_SECTIONS:
            raise SystemExit("unknown section %s (known: %s)" % (s, ", ".join(ALL_SECTIONS)))
    sets = a.sets.split(",")
    need_sets = set(sets) | ({"catalog"} if set(sections) - {"check"} else set()) | (set(SETS) if "scaling" in sections else set())
    sets_ordered = [s for s in SETS if s in need_sets]

    missing = [t for t in PEER_TOOLS.values() if not have(t)]
    if missing and a.smoke and "check" in sections:
        print("bench_smoke: SKIPPED, peers not installed: %s (apt-get install %s)"
              % (", ".join(missing), " ".join({"rg": "ripgrep"}.get(m, m) for m in missing)))
        return 77

    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="run-all-", dir=a.out)
    started = time.monotonic()
    b = {"faultline": a.faultline, "fl_count": a.fl_count, "hs_limit": a.hs_limit}
    if not all(b.values()):
        built = build(a.build_dir)
        b = {k: v or built[k] for k, v in b.items()}
    ctx = {"bin": b, "runs": a.runs, "tmp": tmp, "max_wait": a.max_wait, "sections": sections, "rate": a.rate,
           "latency_seconds": a.latency_seconds, "probes_per_s": a.probes_per_s, "soak": a.soak,
           "soak_rate": a.soak_rate, "files": a.files, "sample_every": a.sample_every, "idle": a.idle,
           "sets": [s for s in sets_ordered if s in sets], "peer_lines": a.peer_lines, "smoke": a.smoke}
    # Where faultline scans with Vectorscan's AVX2 engine (its AVX-512 one misses matches), the corpora section also
    # measures the raw limit of that engine.
    ctx["engine"] = Run([b["faultline"], "version"]).out.strip()
    ctx["avx2_engine"] = "AVX2 engine" in ctx["engine"]
    ctx["rules"] = rulesets(a.out, b["fl_count"], sets_ordered)
    if "latency" in sections:
        ctx["probe_rules"] = probe_rules(a.out, ctx["rules"]["catalog"]["dir"])
    ctx["out"] = a.out
    ctx["corpus_lines"] = a.lines
    if {"scan", "scaling", "follow", "peers"} & set(sections):
        ctx["corpus"] = corpus(a.out, a.lines, 1, 2e-5)
        ctx["corpus_lines"] = a.lines
        ctx["scaling_corpus"] = head_file(ctx["corpus"], os.path.join(a.out, "corpus-head-%d.log" % a.scaling_lines),
                                          a.scaling_lines) if a.scaling_lines < a.lines else ctx["corpus"]
        fl = a.follow_lines or a.lines
        ctx["follow_corpus"] = head_file(ctx["corpus"], os.path.join(a.out, "corpus-head-%d.log" % fl), fl) \
            if fl < a.lines else ctx["corpus"]
    ctx["check_corpus"] = corpus(a.out, a.check_lines, 3, 1e-3)
    ctx["peer_check_corpus"] = head_file(ctx["check_corpus"], os.path.join(a.out, "check-head-%d.log" % a.peer_check_lines),
                                         a.peer_check_lines)
    ctx["peer_corpus"] = corpus(a.out, a.peer_lines, 5, 2e-5)

    raw_path = os.path.join(a.out, "run-all-raw%s.json" % ("-smoke" if a.smoke else ""))
    prev = {}
    if not a.smoke and os.path.exists(raw_path):
        try:
            prev = json.load(open(raw_path)).get("results", {})
        except ValueError:
            prev = {}
    results: dict = {}
    failures = []
    fns = {"check": section_check, "scan": section_scan, "corpora": section_corpora, "parallel": section_parallel, "peers": section_peers, "scaling": section_scaling,
           "follow": section_follow, "latency": section_latency, "memory": section_memory, "startup": section_startup,
           "detector": section_detector}
    for s in ALL_SECTIONS:
        if s not in sections or s == "idle" and "memory" in sections:
            continue
        if s == "idle":  # idle alone: run the memory section's daemon with a minimal soak
            ctx["soak"] = min(ctx["soak"], 10)
            s_fn = "memory"
        else:
            s_fn = s
        t0 = time.monotonic()
        try:
            results[s_fn] = fns[s_fn](ctx)
        except Exception as e:  # noqa: BLE001 -- report and go on with the other sections
            failures.append("%s: %s" % (s, e))
            log("section %s FAILED: %s" % (s, e))
        log("section %s: %.0f s" % (s, time.monotonic() - t0))

    # Harness assertions (correctness only, never time).
    ck = results.get("check", {})
    for s, c in ck.items():
        if c["mismatches"] or c["union_mismatch"]:
            failures.append("check %s: %d per-pattern difference(s), union %s" % (s, len(c["mismatches"]), c["union_mismatch"]))
        if c["hit_patterns"] == 0:
            failures.append("check %s: no pattern hit anything" % s)
    if "follow" in results:
        for r in results["follow"]["rounds"]:
            if r["lost"]:
                failures.append("follow: lines read %s of %s records, bytes %s of %s, shed %s"
                                % (r["lines_read"], r["records_expected"], r["bytes_read"], r["bytes_written"], r["shed"]))
    for k, lr in results.get("latency", {}).items():
        if isinstance(lr, dict) and lr["received"] != lr["sent"]:
            failures.append("latency (%s): %d of %d probes reached the webhook" % (k, lr["received"], lr["sent"]))
    if "peers" in results:
        for k, v in results["peers"]["agree"].items():
            if not v:
                failures.append("peers: %s counts differ from faultline's" % k)

    merged = dict(prev)
    merged.update(results)
    raw = {"date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"), "seconds": time.monotonic() - started,
           "cmdline": (" " + " ".join(sys.argv[1:])) if sys.argv[1:] else "", "machine": machine_info(),
           "args": vars(a), "results": merged,
           "patterns": {s: [p["regex"] for p in ctx["rules"][s]["patterns"]] for s in ctx["rules"]},
           "failures": failures}
    for sec in ("latency",):
        if sec in raw["results"]:
            raw["results"][sec] = dict(raw["results"][sec])
    with open(raw_path, "w") as f:
        json.dump(raw, f, indent=1)
    text = render(raw)
    print(text)
    results_path = a.results or (os.path.join(a.out, "RESULTS-smoke.md") if a.smoke else os.path.join(HERE, "RESULTS.md"))
    if not a.no_write:
        write_section(results_path, text)
        log("wrote %s" % results_path)
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        for f in failures:
            print("FAIL: " + f)
        return 1
    print("OK: every harness step worked%s" % ("; per-pattern counts agree across faultline, hs_limit, %s"
                                                % ", ".join(t for t in PEER_TOOLS if have(t)) if ck else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
