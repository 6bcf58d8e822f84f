"""bench suite, rendering: raw figures -> the Markdown of bench/RESULTS.md."""
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


from suite_common import *  # noqa: F401,F403

# ------------------------------------------------------------------------------------------------ render


def pipeline_ratio(r: dict, limit: str) -> float:
    """The raw limit's time ÷ the in-memory pipeline's in one corpora round: the median of every repetition's ratio
    measured in one fl_count process (each of the round's fl_count runs); rounds recorded before fl_count measured
    the limit itself: hs_limit's fastest run ÷ fl_count's."""
    each = [x for doc in r.get("stages_runs", [r["stages"]])
            for x in doc.get("pairs", {}).get("pipeline/" + limit, {}).get("each", [])]
    if each:
        return statistics.median(each)
    hs = r["hs" if limit == "limit" else "hs_avx2"]["scan_cpu"]
    return hs / r["stages"]["stages"]["pipeline"]["cpu_s"]


def pipeline_ratio_fastest(r: dict, limit: str):
    """The raw limit's fastest repetition ÷ the pipeline's fastest, over every fl_count run of one corpora round (as
    the table's other ratios take each side's fastest run); None for rounds recorded before fl_count gave them."""
    docs = r.get("stages_runs", [r["stages"]])
    lim = [d["stages"][limit].get("cpu_fastest_s") for d in docs if limit in d.get("stages", {})]
    pipe = [d["stages"]["pipeline"].get("cpu_fastest_s") for d in docs if "pipeline" in d.get("stages", {})]
    if not lim or not pipe or None in lim or None in pipe:
        return None
    return min(lim) / min(pipe)


def render(raw: dict) -> str:
    res, a = raw["results"], raw["args"]
    mi = raw["machine"]
    L = []
    L.append("## Benchmark suite (`bench/run_all.py`)")
    L.append("")
    L.append("Measured %s by `bench/run_all.py%s` (%.0f s). Machine: %s, %d cores, %.1f GiB, %s, kernel %s. Peers: %s; "
             "%s; %s; %s. faultline built Release (-O3) from the working tree; the database cached (`--cache`, as the "
             "daemon does in its state dir) unless marked cold."
             % (raw["date"], raw["cmdline"], raw["seconds"], mi["cpu"], mi["cores"], mi["mem_gib"], mi["os"],
                mi["kernel"], mi["mtail"], mi["sec"].replace("\n", " "), mi["rg"], mi["grep"]))
    L.append("")
    L.append("Each figure: median of %d runs (min–max in brackets). Ratios are computed inside each run, then their "
             "median is shown. Wall-clock and CPU time (user+sys of the process, from `getrusage` or "
             "`/proc/<pid>/stat`) are both given: the 2 cores may be shared with other processes, so wall-clock "
             "figures are pessimistic and CPU-time figures are the steadier ones. MB = 10^6 bytes." % a["runs"])
    L.append("")
    targets = []

    sc = res.get("scan")
    if sc:
        B = sc["bytes"]
        rr = sc["rounds"]
        fl_w = [B / r["faultline"]["wall"] / 1e6 for r in rr]
        fl_c = [B / r["faultline"]["cpu"] / 1e6 for r in rr]
        hs_w = [B / r["hs"]["scan_wall"] / 1e6 for r in rr]
        hs_c = [B / r["hs"]["scan_cpu"] / 1e6 for r in rr]
        pipe_c = [B / r["stages"]["stages"]["pipeline"]["cpu_s"] / 1e6 for r in rr]
        dec_c = [B / r["stages"]["stages"]["decode"]["cpu_s"] / 1e6 for r in rr]
        scn_c = [B / r["stages"]["stages"]["scan"]["cpu_s"] / 1e6 for r in rr]
        cold_w = [B / r["faultline_cold"]["wall"] / 1e6 for r in rr]
        cold_c = [B / r["faultline_cold"]["cpu"] / 1e6 for r in rr]
        r_cpu = [(B / r["faultline"]["cpu"]) / (B / r["hs"]["scan_cpu"]) for r in rr]
        r_wall = [(B / r["faultline"]["wall"]) / (B / r["hs"]["scan_wall"]) for r in rr]
        r_pipe = [r["hs"]["scan_cpu"] / r["stages"]["stages"]["pipeline"]["cpu_s"] for r in rr]
        others = [r["faultline"]["others"] for r in rr]
        L.append("### `faultline scan` against the raw Hyperscan limit and ripgrep (full catalog, %d patterns)"
                 % len(raw["patterns"]["catalog"]))
        L.append("")
        L.append("Corpus: `gen_corpus.py --lines %d --seed 1 --inject 2e-05` (raw), %.1f MB. The raw limit is "
                 "`hs_limit --strategies buffered` on the same patterns: one `hs_scan` per 1 MiB of the file already in "
                 "memory, nothing else (no decoding, no per-line work); its MB/s counts scan time only, median of 3 "
                 "repetitions in one process. In each run the raw limit and `faultline scan` are measured %d times in "
                 "turn and the fastest of each is kept: the machine switches speeds, and both sides of a ratio get the "
                 "same chances at the fast one. fl_count's stages are the median of 3 repetitions in one process "
                 "(the first pays first-use costs, ~50 ms, that a whole `scan` counts once). `faultline "
                 "scan` is the whole process (start-up, reading the file, decoding, matching, correlating, "
                 "incidents). Other processes used %s cores meanwhile."
                 % (sc["lines"], B / 1e6, ALTERNATIONS, fmt(others, 1)))
        L.append("")
        L.append("| tool | MB/s (wall) | MB/s (CPU) | ÷ raw limit (wall) | ÷ raw limit (CPU) |")
        L.append("|---|---:|---:|---:|---:|")
        L.append("| raw Hyperscan limit (hs_limit buffered, scan only) | %s | %s | 1 | 1 |" % (fmt(hs_w), fmt(hs_c)))
        L.append("| **`faultline scan --cache`** (whole process) | %s | %s | %s | %s |"
                 % (fmt(fl_w), fmt(fl_c), fmt_ratio(r_wall), fmt_ratio(r_cpu)))
        L.append("| `faultline scan`, cold (compiles the database) | %s | %s | %s | %s |"
                 % (fmt(cold_w), fmt(cold_c), fmt_ratio([(B / r["faultline_cold"]["wall"]) / (B / r["hs"]["scan_wall"]) for r in rr]),
                    fmt_ratio([(B / r["faultline_cold"]["cpu"]) / (B / r["hs"]["scan_cpu"]) for r in rr])))
        L.append("| faultline pipeline in memory (fl_count: decode + match + correlate, no I/O, no start-up) | | %s | "
                 "| %s |" % (fmt(pipe_c), fmt_ratio(r_pipe)))
        if all("rg" in r for r in rr):
            rg_w = [B / r["rg"]["wall"] / 1e6 for r in rr]
            rg_c = [B / r["rg"]["cpu"] / 1e6 for r in rr]
            L.append("| `rg -c -f` (all patterns at once, whole process) | %s | %s | %s | %s |"
                     % (fmt(rg_w), fmt(rg_c), fmt_ratio([(B / r["rg"]["wall"]) / (B / r["hs"]["scan_wall"]) for r in rr]),
                        fmt_ratio([(B / r["rg"]["cpu"]) / (B / r["hs"]["scan_cpu"]) for r in rr])))
            fl_vs_rg_c = [r["rg"]["cpu"] / r["faultline"]["cpu"] for r in rr]
            fl_vs_rg_w = [r["rg"]["wall"] / r["faultline"]["wall"] for r in rr]
        L.append("")
        if all("split_cpu" in r["hs"] and "cat" in r for r in rr):
            bound = [1 / (r["cat"]["cpu"] / B + r["hs"]["split_cpu"] / B + r["hs"]["scan_cpu"] / B) / 1e6 for r in rr]
            budget = [1000 * (r["hs"]["scan_cpu"] / 0.6 - (r["cat"]["cpu"] + r["hs"]["split_cpu"] + r["hs"]["scan_cpu"]))
                      for r in rr]
            dec_extra = [1000 * (r["stages"]["stages"]["decode"]["cpu_s"] - r["hs"]["split_cpu"]) for r in rr]
            corr = [1000 * (r["stages"]["stages"]["pipeline"]["cpu_s"] - r["stages"]["stages"]["scan"]["cpu_s"]) for r in rr]
            L.append("A bound for any design that reads the file and scans it line by line: reading it (`cat FILE > "
                     "/dev/null`: %s MB/s CPU) + finding its newlines and nothing else (`hs_limit --strategies split`: "
                     "%s MB/s CPU) + the raw scan, one after the other on one core: %s MB/s, **%s of the raw limit**, "
                     "before any decoding (time, level, CR split, ANSI), copying into batches, correlation or start-up. "
                     "To reach 0.6× the whole process could spend %s ms on all of those together; on this corpus "
                     "faultline's decoding beyond the bare newline search takes %s ms, correlation %s ms, start-up "
                     "about 55 ms. The in-memory pipeline row compares like with like."
                     % (fmt([B / r["cat"]["cpu"] / 1e6 for r in rr]), fmt([B / r["hs"]["split_cpu"] / 1e6 for r in rr]),
                        fmt(bound), fmt_ratio([bd / (B / r["hs"]["scan_cpu"] / 1e6) for bd, r in zip(bound, rr)]),
                        fmt(budget), fmt(dec_extra), fmt(corr)))
            L.append("")
        L.append("Where faultline's time goes (fl_count on the same corpus, in memory, CPU): decoding alone %s MB/s; "
                 "decode + Hyperscan + RE2 confirmation %s MB/s; + correlation %s MB/s. Self-reported scan time of "
                 "`faultline scan` (after start-up): %s ms."
                 % (fmt(dec_c), fmt(scn_c), fmt(pipe_c), fmt([r["faultline"]["self_ms"] for r in rr])))
        L.append("")
        targets.append(("`faultline scan`, full catalog, %s lines: throughput vs the raw Hyperscan limit" % human(sc["lines"]),
                        "≥ 0.6×", "%s CPU, %s wall (whole process vs scan-only limit); in-memory pipeline %s CPU"
                        % (fmt_ratio(r_cpu), fmt_ratio(r_wall), fmt_ratio(r_pipe)),
                        "met" if med(r_cpu) >= 0.6 else ("in-memory pipeline met, whole process not" if med(r_pipe) >= 0.6 else "missed")))
        if all("rg" in r for r in rr):
            targets.append(("same vs ripgrep (`rg -c -f`, same patterns, same file)", "faster",
                            "%s faster (CPU), %s (wall)" % (fmt_ratio(fl_vs_rg_c, 1), fmt_ratio(fl_vs_rg_w, 1)),
                            "met" if med(fl_vs_rg_c) > 1 else "missed"))

    co = res.get("corpora")
    if co:
        L.append("### Every corpus: `faultline scan` and the in-memory pipeline against the raw limit")
        L.append("")
        L.append("Full catalog, database cached. Corpora: A %s; B %s; B-cri and B-docker: B as the runtimes write it "
                 "(`wrap_corpus.py`: CRI lines, docker json-file entries with Docker's escapes; lines over 4 KB split into "
                 "P fragments / partial entries). Raw limit: `hs_limit --strategies buffered`, scan CPU only, median of 3 "
                 "repetitions. "
                 "In each run the raw limit, `scan -j 1` and the pipeline are measured %d times in turn and the fastest "
                 "of each is kept (the machine switches speeds: both sides of a ratio get the same chances at the fast "
                 "one); the table shows the median of the runs, min-max in brackets. "
                 "`scan -j 1`: the whole process on one thread (start-up included), CPU; ÷ limit = the limit's CPU time ÷ "
                 "scan's. `scan` (every core, %d here): wall. Pipeline: `fl_count --stages pipeline` (decode + match + "
                 "correlate in memory, as `scan -j 1` drives it), CPU, median of %d repetitions in one process (the first "
                 "pays first-use costs that the whole-process figure counts once). Pipeline ÷ limit: measured in that same "
                 "process, repetition by repetition (`fl_count --stages pipeline,limit --limit`: the raw limit's scan of "
                 "the same bytes, as hs_limit does it, right after each repetition of the pipeline; the median of "
                 "the ratios of all %d runs in turn, %d repetitions each), so that both sides see the machine at the same "
                 "speed. ÷ limit, fastest: the same runs' fastest repetition of the limit ÷ their fastest of the "
                 "pipeline, each side's best chance, as the other ratios of this table take them (a neighbour that "
                 "fills the shared cache slows the pipeline's lookups more than the limit's streaming scan, which the "
                 "paired ratio counts against the pipeline). Daemon's path: "
                 "`fl_count --stages feed`, the same "
                 "pipeline fed 1 MiB reads as `run` feeds a tailed file, CPU."
                 % (CORPUS_NAMES["A"], CORPUS_NAMES["B"], ALTERNATIONS, co.get("cores", 0), PAIRED_REPS, ALTERNATIONS,
                    PAIRED_REPS))
        L.append("")
        avx2 = [k for k in co["corpora"] if all("hs_avx2" in r for r in co["corpora"][k]["rounds"])]
        if avx2:
            L.append("faultline scans with Vectorscan's AVX2 engine on this CPU (`%s`): the library's own pick, its "
                     "AVX-512 engine, misses matches depending on where the bytes lie (Vectorscan 5.4.9; "
                     "`daemon/match/match.cpp`). The raw limit in this table stays the library's pick, the faster one; "
                     "the table after it gives the limit of the AVX2 engine, measured in turn with the others, and "
                     "the ratios against it."
                     % co.get("engine", ""))
            L.append("")
        L.append("| corpus | lines | MB | raw limit MB/s | pipeline MB/s | ÷ limit | ÷ limit, fastest | daemon's path MB/s "
                 "| `scan -j 1` MB/s (CPU) | ÷ limit | `scan` self-reported ms | `scan` every core, MB/s (wall) |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for key in sorted(co["corpora"], key=lambda k: (co["corpora"][k]["lines"], CORPORA.index(co["corpora"][k]["corpus"]))):
            c = co["corpora"][key]
            B, rr = c["bytes"], c["rounds"]
            hs_c = [B / r["hs"]["scan_cpu"] / 1e6 for r in rr]
            pipe_c = [B / r["stages"]["stages"]["pipeline"]["cpu_s"] / 1e6 for r in rr]
            fl_c = [B / r["faultline"]["cpu"] / 1e6 for r in rr]
            all_w = [B / r["faultline_all"]["wall"] / 1e6 for r in rr]
            r_pipe = [pipeline_ratio(r, "limit") for r in rr]
            r_fast = [pipeline_ratio_fastest(r, "limit") for r in rr]
            r_fl = [r["hs"]["scan_cpu"] / r["faultline"]["cpu"] for r in rr]
            feed_c = [B / r["stages"]["stages"]["feed"]["cpu_s"] / 1e6 for r in rr if "feed" in r["stages"]["stages"]]
            L.append("| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                     % (c["corpus"], human(c["lines"]), B / 1e6, fmt(hs_c), fmt(pipe_c), fmt_ratio(r_pipe),
                        fmt_ratio(r_fast), fmt(feed_c) if feed_c else "–", fmt(fl_c), fmt_ratio(r_fl),
                        fmt([r["faultline"]["self_ms"] for r in rr]), fmt(all_w)))
            want = 0.6 if c["lines"] >= 5_000_000 else 0.5
            targets.append(("corpus %s, %s lines: `scan -j 1` whole process ÷ raw limit; pipeline ÷ raw limit"
                            % (c["corpus"], human(c["lines"])), "≥ %.1f×; ≥ 0.75×" % want,
                            "%s; %s" % (fmt_ratio(r_fl), fmt_ratio(r_pipe)),
                            "met" if med(r_fl) >= want and med(r_pipe) >= 0.75 else "missed"))
        L.append("")
        if avx2:
            L.append("| corpus | lines | raw limit, AVX2 engine, MB/s | ÷ library's pick | pipeline ÷ AVX2 limit | "
                     "`scan -j 1` ÷ AVX2 limit |")
            L.append("|---|---:|---:|---:|---:|---:|")
            for key in sorted(avx2, key=lambda k: (co["corpora"][k]["lines"], CORPORA.index(co["corpora"][k]["corpus"]))):
                c = co["corpora"][key]
                B, rr = c["bytes"], c["rounds"]
                L.append("| %s | %s | %s | %s | %s | %s |"
                         % (c["corpus"], human(c["lines"]), fmt([B / r["hs_avx2"]["scan_cpu"] / 1e6 for r in rr]),
                            fmt_ratio([r["hs"]["scan_cpu"] / r["hs_avx2"]["scan_cpu"] for r in rr]),
                            fmt_ratio([pipeline_ratio(r, "limit_avx2") for r in rr]),
                            fmt_ratio([r["hs_avx2"]["scan_cpu"] / r["faultline"]["cpu"] for r in rr])))
            L.append("")

    pa = res.get("parallel")
    if pa:
        jobs = pa["jobs"]
        L.append("### `scan -j N`: one file on N threads")
        L.append("")
        L.append("The --lines corpus A and B, full catalog, database cached; wall time of the whole process, each N "
                 "run %d times in turn and the fastest kept (median of the runs), speed-up against `-j 1` inside each "
                 "run. %d cores here: N above that is not measured." % (ALTERNATIONS, pa.get("cores", 0)))
        L.append("")
        L.append("| corpus | MB | " + " | ".join("`-j %s` s (speed-up)" % j for j in jobs) + " |")
        L.append("|---|---:|" + "---:|" * len(jobs))
        for name, c in pa["corpora"].items():
            rr = c["rounds"]
            cells = []
            for j in jobs:
                w = [r[str(j)]["wall"] for r in rr]
                sp = [r["1"]["wall"] / r[str(j)]["wall"] for r in rr]
                cells.append("%s (%s)" % (fmt(w, 2), fmt_ratio(sp)))
            L.append("| %s | %.0f | %s |" % (name, c["bytes"] / 1e6, " | ".join(cells)))
            if "2" in rr[0]:
                sp2 = [r["1"]["wall"] / r["2"]["wall"] for r in rr]
                targets.append(("`scan -j 2` vs `-j 1`, corpus %s, %s lines (wall)" % (name, human(c["lines"])), "≥ 1.7×",
                                fmt_ratio(sp2), "met" if med(sp2) >= 1.7 else "missed"))
        L.append("")

    pe = res.get("peers")
    if pe:
        B = pe["bytes"]
        rr = pe["rounds"]
        L.append("### `faultline scan` against mtail, SEC and GNU grep (full catalog)")
        L.append("")
        L.append("Corpus: `gen_corpus.py --lines %d --seed 5 --inject 2e-05` (raw), %.1f MB (smaller: mtail and SEC "
                 "run every regular expression on every line and take minutes per MB-hundred). mtail: one counter per "
                 "pattern, `--one_shot`. SEC: one `Single` rule per pattern with `continue=TakeNext` (every rule tried "
                 "on every line, as faultline matches every event), counting in Perl, `--notail`. grep: `LC_ALL=C grep "
                 "-E -c -f` (all patterns at once). Ratios: the peer's time ÷ faultline's time for the same file in "
                 "the same run (faultline's includes its start-up, ~%s ms wall here, which dominates on a file this "
                 "small)." % (pe["lines"], B / 1e6, fmt([1000 * r["faultline"]["wall"] for r in rr])))
        L.append("")
        L.append("| tool | MB/s (wall) | MB/s (CPU) | faultline faster by (CPU) | faultline faster by (wall) | per-pattern counts |")
        L.append("|---|---:|---:|---:|---:|---|")
        L.append("| `faultline scan --cache` | %s | %s | | | reference |"
                 % (fmt([B / r["faultline"]["wall"] / 1e6 for r in rr], 1), fmt([B / r["faultline"]["cpu"] / 1e6 for r in rr], 1)))
        ratios = {}
        for tool, label in (("mtail", "mtail --one_shot"), ("sec", "SEC --notail"), ("grep", "GNU grep -E -c -f"),
                            ("rg", "rg -c -f")):
            if not all(tool in r for r in rr):
                continue
            rc = [r[tool]["cpu"] / r["faultline"]["cpu"] for r in rr]
            rw = [r[tool]["wall"] / r["faultline"]["wall"] for r in rr]
            ratios[tool] = (rc, rw)
            key = {"grep": "grep -f", "rg": "rg -f"}.get(tool, tool)
            agree = pe["agree"].get(key)
            L.append("| %s | %s | %s | %s | %s | %s |"
                     % (label, fmt([B / r[tool]["wall"] / 1e6 for r in rr], 2), fmt([B / r[tool]["cpu"] / 1e6 for r in rr], 2),
                        fmt_ratio(rc, 0), fmt_ratio(rw, 0),
                        ("equal" if agree else "DIFFER") + (" (lines hit by any)" if tool in ("grep", "rg") else "")))
        L.append("")
        thr = {}
        if all("faultline_main" in r for r in rr):
            MB = pe["main_bytes"]
            L.append("Throughput ratio (the figure the target asks for): in each run `faultline scan --cache` also scans "
                     "the %.0f MB scan corpus; its MB/s divided by each peer's MB/s on the small corpus:" % (MB / 1e6))
            L.append("")
            L.append("| peer | faultline faster by (CPU) | faultline faster by (wall) |")
            L.append("|---|---:|---:|")
            for t in ratios:
                thr[t] = ([(MB / r["faultline_main"]["cpu"]) / (B / r[t]["cpu"]) for r in rr],
                          [(MB / r["faultline_main"]["wall"]) / (B / r[t]["wall"]) for r in rr])
                L.append("| %s | %s | %s |" % (t, fmt_ratio(thr[t][0], 0), fmt_ratio(thr[t][1], 0)))
            L.append("")
        for tool in ("mtail", "sec"):
            if tool in ratios:
                rc, rw = ratios[tool]
                tc, tw = thr.get(tool, ([], []))
                targets.append(("same vs %s" % ("mtail" if tool == "mtail" else "SEC"), "≥ 100× faster",
                                "throughput %s (CPU), %s (wall); same small file incl. faultline's start-up %s (CPU)"
                                % (fmt_ratio(tc, 0), fmt_ratio(tw, 0), fmt_ratio(rc, 0)),
                                "met" if tc and med(tc) >= 100 and med(tw) >= 100 else "missed"))

    sl = res.get("scaling")
    if sl:
        B = sl["bytes"]
        rr = sl["rounds"]
        L.append("### Cost per byte against the number of patterns")
        L.append("")
        L.append("Corpus: the first %d lines of the scan corpus, %.1f MB. Sets: whole catalog rules taken in id order "
                 "(cat-20, cat-100), the catalog, and the catalog padded with synthetic rules shaped like its "
                 "fingerprints (cat-1000; `gen_rulesets.py`). ns/byte = CPU time ÷ bytes." % (sl["lines"], B / 1e6))
        L.append("")
        L.append("| set | patterns | `faultline scan` ns/B (CPU) | start-up (CPU) | in-memory pipeline ns/B | of which correlation ns/B | raw limit ns/B (CPU) | cost ÷ cat-20 |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")

        def marg(r, s):
            return (r[s]["faultline"]["cpu"] - r[s]["empty"]["cpu"]) / B * 1e9

        for s in SETS:
            if s not in rr[0]:
                continue
            st = [r[s]["stages"]["stages"] for r in rr]
            L.append("| %s | %d | %s | %s ms | %s | %s | %s | %s |"
                     % (s, rr[0][s]["patterns"], fmt([marg(r, s) for r in rr], 2),
                        fmt([1000 * r[s]["empty"]["cpu"] for r in rr]),
                        fmt([x["pipeline"]["cpu_s"] / B * 1e9 for x in st], 2),
                        fmt([(x["pipeline"]["cpu_s"] - x["scan"]["cpu_s"]) / B * 1e9 for x in st], 2),
                        fmt([r[s]["hs"]["scan_cpu"] / B * 1e9 for r in rr], 2),
                        fmt_ratio([marg(r, s) / marg(r, "cat-20") for r in rr])))
        L.append("")
        L.append("`faultline scan` ns/B is the whole process's CPU time on the corpus minus its CPU time on an empty "
                 "file with the same rules (start-up: loading the YAML rules, RE2, the cached database), per byte.")
        L.append("")
        rel = [marg(r, "cat-1000") / marg(r, "cat-20") for r in rr]
        relp = [r["cat-1000"]["stages"]["stages"]["pipeline"]["cpu_s"] / r["cat-20"]["stages"]["stages"]["pipeline"]["cpu_s"] for r in rr]
        targets.append(("per-byte cost at 1,000 patterns vs at 20", "≤ 3×",
                        "%s (`faultline scan`, CPU); in-memory pipeline %s" % (fmt_ratio(rel), fmt_ratio(relp)),
                        "met" if med(rel) <= 3 else "missed"))

    fo = res.get("follow")
    if fo:
        rr = fo["rounds"]
        L.append("### `faultline run` following a file appended as fast as possible")
        L.append("")
        L.append("One file, full catalog, `--output off`, the metrics server on. A Python writer appends the %d-line "
                 "corpus (%.0f MB) in 1 MiB writes as fast as it can; the run ends when `faultline_lines_read_total` "
                 "must reach the number of records the decoder makes of those lines (a physical line holding `\\r` is "
                 "several records; fl_count gives the exact figure). Lines/s = physical lines written ÷ time from the "
                 "first write until the daemon has read the bytes written (`rchar` of `/proc/PID/io`, polled every 5 ms; "
                 "each read is scanned and correlated before the next); then `faultline_bytes_read_total` and "
                 "`faultline_lines_read_total` (published once a second) are checked against the bytes and the record "
                 "count. Writer and daemon share the 2 cores."
                 % (rr[0]["lines_written"], fo["bytes"] / 1e6))
        L.append("")
        L.append("| lines/s | writer done after | daemon CPU | lines per CPU-second | read = written (lines, bytes) | shed | machine busy |")
        L.append("|---:|---:|---:|---:|---|---:|---:|")
        L.append("| %s | %s s | %s s | %s | %s | %s | %s cores |"
                 % (fmt([r["lines_per_s"] for r in rr]), fmt([r["write_seconds"] for r in rr], 2),
                    fmt([r["daemon_cpu"] for r in rr], 2), fmt([r["lines_written"] / max(r["daemon_cpu"], 1e-9) for r in rr]),
                    "yes" if not any(r["lost"] for r in rr) else "NO: " + json.dumps([(r["lines_read"], r["records_expected"], r["bytes_read"], r["bytes_written"]) for r in rr]),
                    fmt([r["shed"] for r in rr]), fmt([r["machine_cores_busy"] for r in rr], 2)))
        L.append("")
        wlim = med([r["write_seconds"] / r["seconds"] for r in rr]) > 0.8
        if wlim:
            L.append("The writer was the bottleneck (it finished %s s into runs of %s s: page-cache writeback throttles "
                     "a writer of 765 MB); the daemon kept up and used %s CPU-seconds, i.e. it could sustain about %s "
                     "lines per second of one core."
                     % (fmt([r["write_seconds"] for r in rr], 2), fmt([r["seconds"] for r in rr], 2),
                        fmt([r["daemon_cpu"] for r in rr], 2),
                        fmt([r["lines_written"] / max(r["daemon_cpu"], 1e-9) for r in rr])))
            L.append("")
        targets.append(("`faultline run` following a file appended as fast as possible: sustained lines/s, nothing lost",
                        "≥ 500k lines/s", "%s lines/s%s, %s; daemon: %s lines per CPU-second"
                        % (fmt([r["lines_per_s"] for r in rr]), " (writer-limited)" if wlim else "",
                           "nothing lost" if not any(r["lost"] for r in rr) else "LOSS",
                           fmt([r["lines_written"] / max(r["daemon_cpu"], 1e-9) for r in rr])),
                        "met" if med([r["lines_per_s"] for r in rr]) >= 500000 and not any(r["lost"] for r in rr) else "missed"))

    la_all = res.get("latency")
    la = la_all.get("disk") if la_all else None
    if la:
        L.append("### Latency from a line's append to its incident at a webhook receiver")
        L.append("")
        L.append("Full catalog plus one probe rule (`FAULTLINE-BENCH-PROBE id=N ...`, keyed on the probe id so every "
                 "probe is a new incident; single event, no tolerance or hold; resolved after 2 s of quiet). The writer appends "
                 "healthy corpus lines "
                 "at %d lines/s (1 ms ticks; achieved %.0f lines/s) and %d probe line(s) per second for %.0f s, "
                 "timestamping each probe right after its `write()`; `webhook_receiver.py` (a separate single-threaded "
                 "process on 127.0.0.1) timestamps each delivery when its headers have arrived. Both use "
                 "CLOCK_MONOTONIC. The first delivery of each probe counts. The path includes the tailer's wake-up, "
                 "the pipeline, the spool write (fsync'd) that precedes every webhook attempt and the HTTP POST. The driver "
                 "runs `sync` first: in an earlier run that started right after the follow section had written 2.3 GB, "
                 "the spool's fsyncs waited behind that writeback and p90 / p99 rose to 14 / 25 ms."
                 % (a["rate"], la["achieved_rate"], a["probes_per_s"], la["seconds"]))
        L.append("")
        L.append("| run | received / sent | p50 | p90 | p99 | max | daemon CPU |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        L.append("| **default: state dir on disk** | %d / %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f %% of a core |"
                 % (la["received"], la["sent"], la["p50_ms"], la["p90_ms"], la["p99_ms"], la["max_ms"],
                    100 * la["daemon_cpu_share"]))
        for k, label in (("tmpfs", "state dir (spool, checkpoint) on tmpfs, where fsync costs nothing"),
                         ("no_checkpoint", "state dir on disk, `checkpoint_interval: 1h` (no periodic checkpoint during the run)")):
            tm = la_all.get(k)
            if tm:
                L.append("| %s | %d / %d | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f %% of a core |"
                         % (label, tm["received"], tm["sent"], tm["p50_ms"], tm["p90_ms"], tm["p99_ms"], tm["max_ms"],
                            100 * tm["daemon_cpu_share"]))
        L.append("")
        ro = la_all.get("receiver_overhead_ms")
        if ro:
            L.append("The receiver's own share (`webhook_receiver.py --calibrate`: connect() to its timestamp, another "
                     "process): p50 %.2f ms, p99 %.2f ms." % (ro[0], ro[1]))
            L.append("")
        ib = la.get("internal_buckets") or {}
        if ib:
            tot = ib.get("+Inf", 0) or 1
            L.append("Inside the daemon (`faultline_incident_latency_seconds`, from reading a line to handing its "
                     "revision to the outputs thread), default run: %d of %d revisions within 1 ms, %d within 2.5 ms, "
                     "%d within 5 ms, %d within 25 ms (the others are catalog incidents the filler raised, held on "
                     "purpose for tolerance or a root cause). Spool fsyncs on this disk: %s (file, directory)."
                     % (ib.get("0.001", 0), tot, ib.get("0.0025", 0), ib.get("0.005", 0), ib.get("0.025", 0),
                        la.get("fsync_note", "?")))
            L.append("")
        targets.append(("latency from a line's append to its incident at a webhook receiver, at %dk lines/s: p50 / p99"
                        % (a["rate"] // 1000), "≤ 5 ms / ≤ 25 ms",
                        "%.2f ms / %.2f ms (%d of %d probes delivered)%s" % (
                            la["p50_ms"], la["p99_ms"], la["received"], la["sent"],
                            "; without the periodic checkpoint %.2f / %.2f ms" % (la_all["no_checkpoint"]["p50_ms"], la_all["no_checkpoint"]["p99_ms"])
                            if la_all.get("no_checkpoint") else ""),
                        "met" if la["p50_ms"] <= 5 and la["p99_ms"] <= 25 and la["received"] == la["sent"] else "missed"))

    me = res.get("memory")
    if me:
        mib = 2**20
        L.append("### Resident memory: full catalog, %d followed files" % me["files"])
        L.append("")
        L.append("%d files in one directory followed through one glob; a writer appends corpus lines round-robin at %d "
                 "lines/s for %d s (the soak; `--soak`, the documented long run is `--soak 1800`); VmRSS sampled "
                 "every %d s from `/proc/<pid>/status`. Steady state = samples after the first %.0f s; growth = median of "
                 "the last %.0f s minus median of the %.0f s after that."
                 % (me["files"], me["rate"], me["soak_seconds"], a["sample_every"], me["warm"], me["window"], me["window"]))
        L.append("")
        L.append("| RSS steady (median) | RSS max | VmHWM | start → end of the soak | daemon CPU during soak |")
        L.append("|---:|---:|---:|---:|---:|")
        g = me.get("growth")
        L.append("| %.1f MiB | %.1f MiB | %.1f MiB | %.1f → %.1f MiB (%+.2f MiB) | %.1f %% of a core |"
                 % (me["rss_steady_median"] / mib, me["rss_max"] / mib, me["hwm"] / mib, (me["rss_first"] or 0) / mib,
                    (me["rss_last"] or 0) / mib, (g or 0) / mib, 100 * me["soak_cpu_share"]))
        L.append("")
        targets.append(("resident memory, full catalog, %d followed files, steady state; growth over a %d-min soak"
                        % (me["files"], me["soak_seconds"] // 60), "≤ 32 MiB; none",
                        "%.1f MiB (max %.1f); %+.2f MiB" % (me["rss_steady_median"] / mib, me["rss_max"] / mib, (g or 0) / mib),
                        "met" if me["rss_max"] <= 32 * mib and (g or 0) <= 0.5 * mib else "missed"))
        idl = me.get("idle")
        if idl:
            L.append("### CPU while idle")
            L.append("")
            L.append("The same daemon (%d files followed, catalog loaded) after the writer stopped and 5 s passed: "
                     "utime+stime from `/proc/<pid>/stat` over %.0f s (resolution %.0f ms)."
                     % (idl["files"], idl["seconds"], 1000 * idl["tick_s"]))
            L.append("")
            L.append("| daemon | CPU seconds | share of a core |")
            L.append("|---|---:|---:|")
            L.append("| after the soak (the figure) | %.2f s in %.0f s | %.3f %% |"
                     % (idl["cpu_seconds"], idl["seconds"], 100 * idl["share"]))
            for k, label in (("default", "fresh daemon, after a 100k-line burst, default settings"),
                             ("rescan_10s", "the same with `tail.rescan_interval: 10s`")):
                v = (me.get("idle_variants") or {}).get(k)
                if v:
                    L.append("| %s | %.2f s in %.0f s | %.3f %% |" % (label, v["cpu_seconds"], v["seconds"], 100 * v["share"]))
            L.append("")
            iv = me.get("idle_variants") or {}
            targets.append(("CPU while idle (no new lines), over %.0f s" % idl["seconds"], "≤ 0.2 % of a core",
                            "%.3f %% (%d files followed, after the soak)%s" % (
                                100 * idl["share"], idl["files"],
                                "; fresh %.2f %%, with `rescan_interval: 10s` %.2f %%" % (100 * iv["default"]["share"], 100 * iv["rescan_10s"]["share"])
                                if "default" in iv and "rescan_10s" in iv else ""),
                            "met" if idl["share"] <= 0.002 else "missed"))

    su = res.get("startup")
    if su:
        rr = su["rounds"]
        L.append("### Start-up to ready")
        L.append("")
        L.append("`faultline run` with the full catalog and one source file, spawned by the driver, `/readyz` polled "
                 "every millisecond until it answers 200. Cold: a new state dir (the database is compiled and cached "
                 "there). Cached: the same state dir again (twice). `scan --cache DIR` on an empty file: whole process.")
        L.append("")
        L.append("| `run` cold | `run` cached | `run` cached, again | `scan` no cache | `scan --cache` cold | `scan --cache` warm |")
        L.append("|---:|---:|---:|---:|---:|---:|")
        L.append("| %s ms | %s ms | %s ms | %s ms | %s ms | %s ms |"
                 % (fmt([1000 * r["cold"] for r in rr]), fmt([1000 * r["cached"] for r in rr]),
                    fmt([1000 * r["cached2"] for r in rr]), fmt([1000 * r["scan_nocache"] for r in rr]),
                    fmt([1000 * r["scan_cold"] for r in rr]), fmt([1000 * r["scan_cached"] for r in rr])))
        L.append("")
        targets.append(("start-up to ready (/readyz 200): cold compile vs cached compiled database", "report both; cached ≤ 100 ms",
                        "cold %s ms, cached %s ms" % (fmt([1000 * r["cold"] for r in rr]), fmt([1000 * r["cached"] for r in rr])),
                        "met" if med([r["cached"] for r in rr]) <= 0.1 else "missed"))

    ck = res.get("check")
    if ck:
        L.append("### Per-pattern agreement")
        L.append("")
        L.append("For every pattern, the number of lines it matches, by every tool, on `gen_corpus.py --lines %d --seed 3 "
                 "--inject 0.001` (mtail and SEC on its first %d lines). faultline's figure comes from `fl_count` "
                 "(faultline_core's Decoder and Scanner, the events' `level:` filters removed so that every tool answers "
                 "the same question: which lines does this regular expression match). Patterns are translated per "
                 "dialect by `peers.py` (ERE for grep, Rust regex in byte mode for rg, Go RE2 for mtail, Perl for SEC)."
                 % (a["check_lines"], a["peer_check_lines"]))
        L.append("")
        L.append("| set | patterns | patterns that hit | tools compared | per-pattern differences | lines hit by any pattern (faultline / grep -f / rg -f) |")
        L.append("|---|---:|---:|---|---:|---|")
        for s, c in ck.items():
            L.append("| %s | %d | %d (%d on the short corpus) | %s | %d | %s |"
                     % (s, c["patterns"], c["hit_patterns"], c["small_hit_patterns"], ", ".join(c["tools"]), len(c["mismatches"]),
                        " / ".join(str(c["unions"].get(k, "–")) for k in ("faultline", "grep -f", "rg -f"))))
        L.append("")
        bad = [m for c in ck.values() for m in c["mismatches"]]
        if bad:
            L.append("Differences:")
            L.append("")
            for m in bad[:40]:
                L.append("- %s, pattern %d (`%s/%s`): faultline %d, %s %d" % (m["tool"], m["id"], m["rule"], m["event"],
                                                                            m["faultline"], m["tool"], m["other"]))
            L.append("")

    if targets:
        T = ["### Targets (issue 6)", "", "| figure | target | measured | |", "|---|---|---|---|"]
        for t in targets:
            T.append("| %s | %s | %s | %s |" % t)
        T.append("")
        L = L[:4] + T + L[4:]
    return "\n".join(L).rstrip() + "\n"


def write_section(path: str, text: str) -> None:
    block = BEGIN + "\n" + text + END + "\n"
    old = open(path, encoding="utf-8").read() if os.path.exists(path) else "# faultline benchmark results\n\n"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)

