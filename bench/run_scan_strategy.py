#!/usr/bin/env python3
"""Scan-strategy benchmark driver: buffered vs per-line Hyperscan scanning at 20 / 100 / 1000 patterns.

  bench/run_scan_strategy.py            # full run (1M lines, 3 runs), writes bench/RESULTS.md "Scan strategy"
  bench/run_scan_strategy.py --smoke    # 20k lines, 1 run, seconds; writes bench/out/RESULTS-smoke.md

Steps: build bench/hs_limit (standalone CMake build in bench/out/build, independent of faultline_core),
generate the corpus (gen_corpus.py, cached in bench/out/), run `cat FILE > /dev/null`, `wc -l` and
hs_limit with each pattern set RUNS times (strategies interleaved inside hs_limit, sets interleaved
across runs), take the median of the runs with min-max spread, check correctness (strategies agree per
pattern; every injected failure's decisive line is hit by a seed pattern) and write the table.

The machine is shared: before each measurement the driver waits (up to --max-wait s) for the other
processes to leave at least one core idle, and it records the CPU the others used during each
measurement. hs_limit reports wall-clock and thread-CPU throughput; on a busy machine the CPU-time
figures are the steadier ones and the table shows both.

Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

from measure import Run, wait_quiet

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")
SETS = {"seed": "patterns/seed.txt", "synth-100": "patterns/synth-100.txt", "synth-1000": "patterns/synth-1000.txt"}
STRATEGIES = ["split", "buffered", "verify", "perline", "stream"]
BEGIN, END = "<!-- BEGIN scan-strategy -->", "<!-- END scan-strategy -->"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ machine

def machine_info(hs_version: str) -> dict:
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()
    osr = ""
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'PRETTY_NAME="([^"]+)"', f.read())
            osr = m.group(1) if m else ""
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "os": osr or platform.platform(), "kernel": platform.release(),
            "cxx": cxx[0] if cxx else "?", "hs": hs_version.strip(), "python": platform.python_version()}


# ------------------------------------------------------------------------------------------- build

def build(build_dir: str) -> str:
    exe = os.path.join(build_dir, "hs_limit")
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        log("configuring %s" % build_dir)
        subprocess.run(["cmake", "-S", HERE, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release"], check=True,
                       stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", "hs_limit"], check=True, stdout=subprocess.DEVNULL)
    return exe


def corpus(lines: int, seed: int, inject: float) -> tuple[str, str]:
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "corpus-%d-s%d-i%g.log" % (lines, seed, inject))
    manifest = path[:-4] + ".manifest.json"
    gen = os.path.join(HERE, "gen_corpus.py")
    if (not os.path.exists(path) or not os.path.exists(manifest)
            or os.path.getmtime(path) < os.path.getmtime(gen)):
        log("generating %s" % path)
        subprocess.run([sys.executable, gen, "--lines", str(lines), "--seed", str(seed), "--inject", str(inject),
                        "--out", path, "--manifest", manifest], check=True)
    return path, manifest


# --------------------------------------------------------------------------------------------- stats

def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def fmt_ms(xs: list[float]) -> str:
    """median (min-max) of rates."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return "%.0f" % xs[0]
    return "%.0f (%.0f–%.0f)" % (med(xs), min(xs), max(xs))


# ---------------------------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="20k lines, 1 run, 1 rep: a check that finishes in seconds")
    ap.add_argument("--lines", type=int, help="corpus lines (default 1000000; smoke 20000)")
    ap.add_argument("--seed", type=int, default=1, help="corpus seed (default 1)")
    ap.add_argument("--inject", type=float, help="injected failure rate per line (default max(2e-5, 18/lines): "
                                                 "at least two of each of the nine kinds)")
    ap.add_argument("--runs", type=int, help="hs_limit processes per pattern set (default 3; smoke 1)")
    ap.add_argument("--reps", type=int, help="interleaved reps per strategy inside hs_limit (default 5; smoke 1)")
    ap.add_argument("--sets", help="pattern sets (default %s; smoke seed,synth-100)" % ",".join(SETS))
    ap.add_argument("--som-sets", help="sets for the one-off SOM check (default seed,synth-100; smoke seed)")
    ap.add_argument("--hs-limit", help="use this hs_limit binary instead of building one")
    ap.add_argument("--build-dir", default=os.path.join(OUT, "build"))
    ap.add_argument("--max-wait", type=float, help="seconds to wait for a quiet core before each measurement "
                                                   "(default 30; smoke 0)")
    ap.add_argument("--results", help="markdown file to update (default bench/RESULTS.md; smoke "
                                      "bench/out/RESULTS-smoke.md)")
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    ap.add_argument("--render-only", metavar="RAW", help="re-render the report from a saved raw JSON "
                    "(bench/out/scan-strategy-raw*.json) without measuring")
    args = ap.parse_args()

    smoke = args.smoke
    lines = args.lines or (20_000 if smoke else 1_000_000)
    runs = args.runs or (1 if smoke else 3)
    reps = args.reps or (1 if smoke else 5)
    max_wait = args.max_wait if args.max_wait is not None else (0.0 if smoke else 30.0)
    som_sets = (args.som_sets or ("seed" if smoke else "seed,synth-100")).split(",")
    sets = [s for s in (args.sets or ("seed,synth-100" if smoke else ",".join(SETS))).split(",") if s]
    inject = args.inject if args.inject is not None else max(2e-5, 18 / lines)
    for s in sets + [x for x in som_sets if x]:
        if s not in SETS:
            raise SystemExit("unknown pattern set %r (known: %s)" % (s, ", ".join(SETS)))
    results_path = args.results or (os.path.join(OUT, "RESULTS-smoke.md") if smoke else
                                    os.path.join(HERE, "RESULTS.md"))
    raw_path = os.path.join(OUT, "scan-strategy-raw%s.json" % ("-smoke" if smoke else ""))
    if args.render_only:
        with open(args.render_only, encoding="utf-8") as f:
            raw = json.load(f)
        if args.results is None and raw.get("smoke"):
            results_path = os.path.join(OUT, "RESULTS-smoke.md")
        finish(raw, results_path, args.no_write)
        return

    os.chdir(HERE)
    for name in sets:
        if not os.path.exists(SETS[name]):
            subprocess.run([sys.executable, "gen_patterns.py"], check=True)
    exe = args.hs_limit or build(args.build_dir)
    path, manifest_path = corpus(lines, args.seed, inject)
    size = os.path.getsize(path)
    with open(manifest_path) as f:
        manifest = json.load(f)

    # Warm the page cache.
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)

    data: dict[str, dict] = {s: {"runs": []} for s in sets}
    base: dict[str, list] = {"cat": [], "cat_cpu": [], "wc": [], "wc_cpu": []}
    others: list[float] = []
    quiet_seen: list[float] = []
    t_start = time.time()
    for r in range(runs):
        quiet_seen.append(wait_quiet(max_wait, probe=0.5, pause=1.0))
        m = Run(["cat", path], stdout=subprocess.DEVNULL)
        base["cat"].append(size / 1e6 / m.wall)
        base["cat_cpu"].append(size / 1e6 / max(m.cpu, 1e-9))
        others.append(m.others)
        m = Run(["wc", "-l", path])
        base["wc"].append(size / 1e6 / m.wall)
        base["wc_cpu"].append(size / 1e6 / max(m.cpu, 1e-9))
        for name in sets:
            quiet_seen.append(wait_quiet(max_wait, probe=0.5, pause=1.0))
            cmd = [exe, "--json", "--reps", str(reps), "--strategies", ",".join(STRATEGIES), SETS[name], path]
            log("run %d/%d: %s" % (r + 1, runs, name))
            m = Run(cmd)
            rep = json.loads(m.out)
            rep["others_cores"] = m.others
            others.append(m.others)
            data[name]["runs"].append(rep)

    # One-off SOM check.
    som: dict[str, dict] = {}
    for name in [x for x in som_sets if x]:
        wait_quiet(max_wait, probe=0.5, pause=1.0)
        log("som check: %s" % name)
        m = Run([exe, "--json", "--reps", str(reps), "--strategies", "buffered,som", SETS[name], path])
        som[name] = json.loads(m.out)

    # Correctness: seed hits vs the manifest.
    hits_file = os.path.join(OUT, "seed-hits.tsv")
    m = Run([exe, "--strategies", "verify", "--hits", hits_file, SETS["seed"], path])
    hit_lines: dict[int, set] = {}
    with open(hits_file) as f:
        for ln in f:
            a, b = ln.split()
            hit_lines.setdefault(int(a), set()).add(int(b))
    missed = [e for e in manifest if e["line"] not in hit_lines]
    kinds = sorted({e["kind"] for e in manifest})
    mismatch_runs = [(n, rep["mismatches"]) for n in sets for rep in data[n]["runs"] if rep["mismatches"]]
    elapsed = time.time() - t_start

    raw = {"smoke": smoke, "lines": lines, "seed": args.seed, "inject": inject, "runs": runs, "reps": reps,
           "max_wait": max_wait, "sets": sets, "size": size, "data": data, "base": base, "others": others,
           "som": som, "manifest": manifest, "missed": missed, "kinds": kinds, "mismatch_runs": mismatch_runs,
           "elapsed": elapsed, "when": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
           "machine": machine_info(data[sets[0]]["runs"][0]["hs_version"])}
    with open(raw_path, "w", encoding="utf-8") as f:
        json.dump(raw, f)
    log("raw measurements in %s" % raw_path)
    finish(raw, results_path, args.no_write)


def finish(raw: dict, results_path: str, no_write: bool) -> None:
    text, console = render(raw)
    print(console)
    if not no_write:
        write_section(results_path, text)
    if raw["missed"] or raw["mismatch_runs"]:
        sys.exit(1)


def render(raw: dict) -> tuple[str, str]:
    """The RESULTS.md section and a console summary from the raw measurements."""
    smoke, lines, inject, runs, reps = raw["smoke"], raw["lines"], raw["inject"], raw["runs"], raw["reps"]
    sets, size, data, base, others, som = raw["sets"], raw["size"], raw["data"], raw["base"], raw["others"], raw["som"]
    manifest, missed, kinds, mismatch_runs = raw["manifest"], raw["missed"], raw["kinds"], raw["mismatch_runs"]
    mi = raw["machine"]
    first = data[sets[0]]["runs"][0]
    n_lines = first["lines"]

    def series(name: str, strat: str, key: str) -> list[float]:
        out = []
        for rep in data[name]["runs"]:
            for s in rep["strategies"]:
                if s["name"] == strat and s["ran"]:
                    out.append(s[key])
        return out

    def comp(name: str, kind: str, key: str = "seconds") -> list[float]:
        return [rep["compile"][kind][key] for rep in data[name]["runs"] if kind in rep["compile"]]

    rows = []
    for name in sets:
        r0 = data[name]["runs"][0]
        row = {"name": name, "patterns": r0["patterns"],
               "c_block": [x * 1e3 for x in comp(name, "block")], "c_stream": [x * 1e3 for x in comp(name, "stream")],
               "db_kib": r0["compile"]["block"]["db_bytes"] / 1024, "scratch_kib": r0["scratch_bytes"] / 1024,
               "stream_state": r0["compile"]["stream"]["stream_state_bytes"],
               "others": max(rep["others_cores"] for rep in data[name]["runs"])}
        for strat in STRATEGIES:
            row[strat] = series(name, strat, "mb_per_s")
            row[strat + "_cpu"] = series(name, strat, "cpu_mb_per_s")
        # per-line cost: ratio and extra ns per line, from the CPU-time medians
        b, p = med(row["buffered_cpu"]), med(row["perline_cpu"])
        row["ratio_cpu"] = b / p if p else float("nan")
        row["extra_ns_cpu"] = (size / 1e6 / p - size / 1e6 / b) / n_lines * 1e9 if p and b else float("nan")
        b, p = med(row["buffered"]), med(row["perline"])
        row["ratio"] = b / p if p else float("nan")
        row["extra_ns"] = (size / 1e6 / p - size / 1e6 / b) / n_lines * 1e9 if p and b else float("nan")
        rows.append(row)

    def table_main(cpu: bool) -> list[str]:
        suf = "_cpu" if cpu else ""
        out = ["| patterns | buffered 1 MiB | verify | per-line | stream | split only | per-line ÷ buffered | "
               "per-line extra ns/line |",
               "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for row in rows:
            out.append("| %s (%d) | %s | %s | %s | %s | %s | %.2f× | %.0f |" % (
                row["name"], row["patterns"], fmt_ms(row["buffered" + suf]), fmt_ms(row["verify" + suf]),
                fmt_ms(row["perline" + suf]), fmt_ms(row["stream" + suf]), fmt_ms(row["split" + suf]),
                row["ratio" + suf], row["extra_ns" + suf]))
        out.append("| `cat > /dev/null` | %s | | | | | | |" % fmt_ms(base["cat" + suf]))
        out.append("| `wc -l` | %s | | | | | | |" % fmt_ms(base["wc" + suf]))
        return out

    compile_tbl = ["| patterns | compile block ms | compile stream ms | block db KiB | scratch KiB | stream state B |",
                   "|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        compile_tbl.append("| %s (%d) | %s | %s | %.0f | %.0f | %d |" % (
            row["name"], row["patterns"], fmt_ms(row["c_block"]), fmt_ms(row["c_stream"]), row["db_kib"],
            row["scratch_kib"], row["stream_state"]))

    som_tbl = []
    if som:
        som_tbl = ["| patterns | SOM compile ms | patterns too large with SOM | probing them ms | buffered MB/s "
                   "(cpu) | SOM MB/s (cpu) | buffered ÷ SOM |", "|---|---:|---:|---:|---:|---:|---:|"]
        for name, rep in som.items():
            st = {s["name"]: s for s in rep["strategies"]}
            c = rep["compile"].get("som", {})
            if st.get("som", {}).get("ran"):
                som_tbl.append("| %s (%d) | %.0f | %d | %.0f | %.0f | %.0f | %.2f× |" % (
                    name, rep["patterns"], c["seconds"] * 1e3, c["som_dropped"], c["probe_seconds"] * 1e3,
                    st["buffered"]["cpu_mb_per_s"], st["som"]["cpu_mb_per_s"],
                    st["buffered"]["cpu_mb_per_s"] / st["som"]["cpu_mb_per_s"]))
            else:
                som_tbl.append("| %s (%d) | failed: %s | | | | | |" % (name, rep["patterns"], c.get("error", "?")))

    max_others = max(others) if others else 0.0
    med_others = med(others) if others else 0.0
    now = raw["when"]
    md = [BEGIN, "## Scan strategy", "",
          "Measured %s by `bench/run_scan_strategy.py%s` (%.0f s). Machine: %s, %s cores, %s, kernel %s; "
          "Vectorscan %s; %s; hs_limit built Release (-O3)." % (
              now, " --smoke" if smoke else "", raw["elapsed"], mi["cpu"], mi["cores"], mi["os"], mi["kernel"], mi["hs"],
              mi["cxx"]),
          "",
          "Corpus: `gen_corpus.py --lines %d --seed %d --inject %g` (raw format): %.1f MB, %d lines, mean %.0f B/line, "
          "%d injected failure sequences (%d kinds)." % (lines, raw["seed"], inject, size / 1e6, n_lines,
                                                       size / max(n_lines, 1), len(manifest), len(kinds)),
          "Each figure: median of %d hs_limit runs (min–max in brackets); inside each run every strategy scans the "
          "whole in-memory file %d time(s), interleaved, and reports its median. MB/s = 10^6 bytes/s." % (runs, reps),
          "",
          "The machine is shared with other builds: the driver waited up to %.0f s for a free core before each "
          "measurement, and other processes still used %.1f cores (median; up to %.1f) of the %s during the "
          "measurements. That lowers wall-clock MB/s for every strategy alike (first table); thread-CPU MB/s "
          "(second table) is the steadier figure and the one the conclusions use." % (
              raw["max_wait"], med_others, max_others, mi["cores"]),
          "",
          "### Throughput, wall clock (MB/s)", ""] + table_main(False) + [
          "", "### Throughput, thread CPU time (MB/s)", ""] + table_main(True) + [
          "",
          "*buffered*: `hs_scan` over ~1 MiB buffers cut at newlines, match end offset → line, dedup per (pattern, "
          "line). *verify*: buffered, then every line holding a match end is scanned again alone — exact per-line "
          "semantics. *per-line*: one `hs_scan` per line. *stream*: streaming database, 1 MiB chunks cut anywhere. "
          "*split only*: the memchr line loop without scanning. Per-line extra ns/line = (1/per-line − 1/buffered) "
          "per line.",
          "", "### Compile", ""] + compile_tbl + [
          "",
          "Compile times are for `hs_compile_multi` on this machine (median of the runs); they scale roughly "
          "linearly with the pattern count. Compile once per rule-set load (on the reload thread) or load a cached "
          "serialized database.", ""]
    if som_tbl:
        md += ["### SOM variant (HS_FLAG_SOM_LEFTMOST, one run)", ""] + som_tbl + [
            "",
            "SOM lets the callback check that start and end lie in one line, but many bounded-gap patterns "
            "(`[^\\n]{0,120}`, large alternations after a gap) are *too large* with SOM and must be compiled without "
            "it; finding them costs about a second of compile time each. `verify` gives the same guarantee exactly, "
            "for every pattern, at almost no scan cost and no compile cost.", ""]
        if "synth-1000" not in som:
            md[-1:-1] = ["synth-1000 is not in the default SOM check: in a trial on this machine (2026-11-30, under "
                         "load) 234 of its 1000 patterns were too large with SOM and finding them took 6.5 minutes "
                         "(`--som-sets synth-1000` repeats it)."]
    md += ["### Correctness", "",
           "- Per-pattern matching-line counts of buffered, verify and stream equal those of per-line scanning in "
           "%s." % ("every run" if not mismatch_runs else "NOT every run: %s" % mismatch_runs),
           "- Injected failures whose decisive line is hit by a seed pattern: %d of %d (kinds: %s)%s." % (
               len(manifest) - len(missed), len(manifest), ", ".join(kinds),
               "" if not missed else "; MISSED: %s" % ", ".join("%s@%d" % (e["kind"], e["line"]) for e in missed)),
           "- Caveat: in a multi-line buffer a pattern with `\\s`, a negated class without `\\n`, `\\W`/`\\D` or "
           "`\\n` can match across a newline; buffered and stream then attribute it to the line of its last byte. "
           "`patterns/crossing.txt` demonstrates it (hs_limit prints MISMATCH lines); verify removes it.",
           "",
           "### What this decides",
           "",
           "One `hs_scan` call per line versus buffered scanning decides the matcher's scan strategy. Per-line "
           "scanning costs %s more CPU per line than 1 MiB buffers at %s patterns (%s slower; thread CPU time). "
           "So the matcher should scan decoded records in large buffers (records joined by `\\n`), map each match "
           "end to its record, and re-scan alone only the records that hit (*verify*): per-line semantics, no "
           "cross-line false hits, at %s of buffered speed." % (
               " / ".join("%.0f ns" % r["extra_ns_cpu"] for r in rows),
               " / ".join(str(r["patterns"]) for r in rows),
               " / ".join("%.1f×" % r["ratio_cpu"] for r in rows),
               " / ".join("%.0f %%" % (100 * med(r["verify_cpu"]) / med(r["buffered_cpu"])) for r in rows)),
           "",
           "Stream mode (1 MiB chunks cut anywhere) against block mode: %s. Which database mode is faster depends "
           "on the pattern set (Hyperscan builds different engines per mode), so it is worth re-measuring with the "
           "real rule catalog. Stream mode also needs %s of state per open stream; its one advantage is that chunks "
           "need not end at a newline." % (
               ", ".join("%.2f× at %d patterns" % (med(r["stream_cpu"]) / med(r["buffered_cpu"]), r["patterns"])
                         for r in rows),
               " / ".join("%d B" % r["stream_state"] for r in rows)),
           END]
    text = "\n".join(md) + "\n"

    console = ["", "\n".join(table_main(False)), "", "\n".join(table_main(True)), "", "\n".join(compile_tbl)]
    if som_tbl:
        console += ["", "\n".join(som_tbl)]
    console += ["", "correctness: mismatching runs: %d; injected failures hit: %d/%d" % (
        len(mismatch_runs), len(manifest) - len(missed), len(manifest)),
        "other processes used %.1f cores (median), up to %.1f, during measurements" % (med_others, max_others)]
    return text, "\n".join(console)


def write_section(results_path: str, text: str) -> None:
    os.makedirs(os.path.dirname(results_path), exist_ok=True)
    if os.path.exists(results_path):
        with open(results_path, encoding="utf-8") as f:
            old = f.read()
        if BEGIN in old and END in old:
            new = old[:old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
        else:
            new = old.rstrip("\n") + "\n\n" + text
    else:
        new = ("# faultline benchmark results\n\nWritten by the scripts in `bench/` (see bench/README.md); each "
               "section is replaced by the script that owns it.\n\n" + text)
    with open(results_path, "w", encoding="utf-8") as f:
        f.write(new)
    log("wrote %s" % results_path)


if __name__ == "__main__":
    main()
