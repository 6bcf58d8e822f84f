"""bench suite, the sections that measure matching and start-up (check, scan, corpora, parallel, peers, scaling,
startup): each measures one figure family and returns its raw numbers. The sections that run the daemon (follow,
latency, memory, idle) are in suite_daemon.py."""
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
from suite_common import tl, peers  # noqa: F401

# ------------------------------------------------------------------------------------------------ sections

def section_check(ctx: dict) -> dict:
    """Per-pattern agreement of every tool on every set."""
    b, res = ctx["bin"], {}
    path, ppath = ctx["check_corpus"], ctx["peer_check_corpus"]
    for s in ctx["sets"]:
        rs = ctx["rules"][s]
        pats, progs = rs["patterns"], rs["progs"]
        n = len(pats)
        log("check %s (%d patterns)" % (s, n))
        fl = fl_counts(b, rs["dir"], path)
        tools = {"hs_limit": hs_counts(b, progs, path)}
        unions = {"faultline": fl["union"]}
        if have("grep"):
            tools["grep"] = grep_counts(pats, progs, path)
            unions["grep -f"] = grep_union(progs, path)[0]
        if have("rg"):
            tools["rg"] = rg_counts(progs, path)
            unions["rg -f"] = rg_union(progs, path)[0]
        fl_small = fl_counts(b, rs["dir"], ppath)
        small = {}
        if have("mtail"):
            small["mtail"] = mtail_run(progs, ppath, n)[0]
        if have("sec"):
            small["sec"] = sec_run(progs, ppath, n, ctx["tmp"])[0]
        mism = []
        for tool, counts in list(tools.items()) + list(small.items()):
            ref = fl_small["counts"] if tool in small else fl["counts"]
            for i in range(n):
                if counts[i] != ref[i]:
                    mism.append({"tool": tool, "id": i, "rule": pats[i]["rule"], "event": pats[i]["event"],
                                 "faultline": ref[i], "other": counts[i], "regex": pats[i]["regex"]})
        union_bad = {k: v for k, v in unions.items() if v != fl["union"]}
        res[s] = {"patterns": n, "hit_patterns": sum(1 for c in fl["counts"] if c), "hit_lines": sum(fl["counts"]),
                  "union": fl["union"], "unions": unions, "tools": sorted(tools) + sorted(small),
                  "small_hit_patterns": sum(1 for c in fl_small["counts"] if c), "mismatches": mism,
                  "union_mismatch": union_bad}
        for m in mism[:20]:
            log("  MISMATCH %s pattern %d %s/%s: faultline %d, %s %d" % (m["tool"], m["id"], m["rule"], m["event"],
                                                                          m["faultline"], m["tool"], m["other"]))
        for k, v in union_bad.items():
            log("  MISMATCH lines hit by any pattern: faultline %d, %s %d" % (fl["union"], k, v))
    return res


def section_scan(ctx: dict) -> dict:
    b, runs, path = ctx["bin"], ctx["runs"], ctx["corpus"]
    rs = ctx["rules"]["catalog"]
    cache = os.path.join(ctx["tmp"], "scan-cache")
    scan_run(b, rs["dir"], ctx["check_corpus"], cache)  # fill the cache
    rounds = []
    for i in range(runs):
        log("scan: run %d/%d" % (i + 1, runs))
        wait_quiet(ctx["max_wait"])
        r = alternate({"faultline": lambda: scan_run(b, rs["dir"], path, cache),
                       "hs": lambda: hs_scan(b, rs["progs"], path, split=True)},
                      {"faultline": lambda x: x["cpu"], "hs": lambda x: x["scan_cpu"]})
        cat = Run(["cat", path], stdout=subprocess.DEVNULL)
        r["cat"] = {"wall": cat.wall, "cpu": cat.cpu}
        if have("rg"):
            u, rr = rg_union(rs["progs"], path)
            r["rg"] = {"wall": rr.wall, "cpu": rr.cpu, "others": rr.others, "union": u}
        r["faultline_cold"] = scan_run(b, rs["dir"], path, None)
        fc = Run([b["fl_count"], "--rules", rs["dir"], "--cache", cache, "--levels", "--stages", "decode,scan,pipeline",
                  "--reps", "3", "--json", path])
        r["stages"] = json.loads(fc.out)
        rounds.append(r)
    return {"rounds": rounds, "bytes": os.path.getsize(path), "lines": ctx["corpus_lines"]}


def section_corpora(ctx: dict) -> dict:
    """Per corpus and size: the raw limit, the in-memory pipeline and `faultline scan` (-j 1 and every core)."""
    b, runs = ctx["bin"], ctx["runs"]
    rs = ctx["rules"]["catalog"]
    cache = os.path.join(ctx["tmp"], "scan-cache")
    scan_run(b, rs["dir"], ctx["check_corpus"], cache)
    out = {}
    for lines in sorted({min(1_000_000, ctx["corpus_lines"]), ctx["corpus_lines"]}):
        for name in CORPORA:
            path = corpus_of(ctx["out"], name, lines)
            rounds = []
            for i in range(runs):
                log("corpora: %s %s lines, run %d/%d" % (name, human(lines), i + 1, runs))
                wait_quiet(ctx["max_wait"])
                # The pipeline and the raw limit in one process, repetition by repetition (fl_count's `pairs`): a
                # ratio the machine's changes of speed between minutes do not move.
                limits = "limit,limit_avx2" if ctx.get("avx2_engine") else "limit"
                pipeline = [b["fl_count"], "--rules", rs["dir"], "--cache", cache, "--levels", "--stages",
                            "pipeline,%s,feed" % limits, "--limit", rs["progs"]["hs"], "--reps", str(PAIRED_REPS),
                            "--json", path]
                measures = {"hs": lambda: hs_scan(b, rs["progs"], path),
                            "faultline": lambda: scan_run(b, rs["dir"], path, cache),
                            "stages": lambda: json.loads(Run(pipeline).out)}
                keys = {"hs": lambda x: x["scan_cpu"], "faultline": lambda x: x["cpu"],
                        "stages": lambda x: x["stages"]["pipeline"]["cpu_s"]}
                if ctx.get("avx2_engine"):  # the engine faultline scans with on this CPU (daemon/match/match.cpp)
                    measures["hs_avx2"] = lambda: hs_scan(b, rs["progs"], path, engine="avx2")
                    keys["hs_avx2"] = lambda x: x["scan_cpu"]
                r = alternate(measures, keys)
                r["faultline_all"] = scan_run(b, rs["dir"], path, cache, jobs=None)
                rounds.append(r)
            out["%s/%d" % (name, lines)] = {"corpus": name, "lines": lines, "bytes": os.path.getsize(path),
                                            "rounds": rounds}
    return {"corpora": out, "cores": os.cpu_count(), "engine": ctx.get("engine", "")}


def section_parallel(ctx: dict) -> dict:
    """`faultline scan -j N` on the --lines corpus A and B: wall time per N (1, 2, 4, 8 up to the cores here)."""
    b, runs = ctx["bin"], ctx["runs"]
    rs = ctx["rules"]["catalog"]
    cache = os.path.join(ctx["tmp"], "scan-cache")
    scan_run(b, rs["dir"], ctx["check_corpus"], cache)
    jobs = [j for j in (1, 2, 4, 8) if j <= (os.cpu_count() or 1)]
    out = {}
    for name in ("A", "B"):
        path = corpus_of(ctx["out"], name, ctx["corpus_lines"])
        rounds = []
        for i in range(runs):
            log("parallel: %s run %d/%d" % (name, i + 1, runs))
            wait_quiet(ctx["max_wait"])
            rounds.append(alternate({str(j): (lambda j=j: scan_run(b, rs["dir"], path, cache, jobs=j)) for j in jobs},
                                    {str(j): (lambda x: x["wall"]) for j in jobs}))
        out[name] = {"bytes": os.path.getsize(path), "lines": ctx["corpus_lines"], "rounds": rounds}
    return {"corpora": out, "jobs": jobs, "cores": os.cpu_count()}


def section_peers(ctx: dict) -> dict:
    b, runs, path = ctx["bin"], ctx["runs"], ctx["peer_corpus"]
    rs = ctx["rules"]["catalog"]
    n = len(rs["patterns"])
    cache = os.path.join(ctx["tmp"], "scan-cache")
    scan_run(b, rs["dir"], ctx["check_corpus"], cache)
    ref = fl_counts(b, rs["dir"], path)
    rounds, agree = [], {}
    for i in range(runs):
        log("peers: run %d/%d" % (i + 1, runs))
        wait_quiet(ctx["max_wait"])
        r = {"faultline": scan_run(b, rs["dir"], path, cache)}
        if ctx.get("corpus"):
            r["faultline_main"] = scan_run(b, rs["dir"], ctx["corpus"], cache)
        if have("mtail"):
            c, rr = mtail_run(rs["progs"], path, n)
            r["mtail"] = {"wall": rr.wall, "cpu": rr.cpu, "others": rr.others}
            agree["mtail"] = c == ref["counts"]
        if have("sec"):
            c, rr = sec_run(rs["progs"], path, n, ctx["tmp"])
            r["sec"] = {"wall": rr.wall, "cpu": rr.cpu, "others": rr.others}
            agree["sec"] = c == ref["counts"]
        if have("grep"):
            u, rr = grep_union(rs["progs"], path)
            r["grep"] = {"wall": rr.wall, "cpu": rr.cpu, "others": rr.others}
            agree["grep -f"] = u == ref["union"]
        if have("rg"):
            u, rr = rg_union(rs["progs"], path)
            r["rg"] = {"wall": rr.wall, "cpu": rr.cpu, "others": rr.others}
            agree["rg -f"] = u == ref["union"]
        rounds.append(r)
    return {"rounds": rounds, "bytes": os.path.getsize(path), "lines": ctx["peer_lines"], "agree": agree,
            "main_bytes": os.path.getsize(ctx["corpus"]) if ctx.get("corpus") else None,
            "hit_patterns": sum(1 for c in ref["counts"] if c)}


def section_scaling(ctx: dict) -> dict:
    b, runs, path = ctx["bin"], ctx["runs"], ctx["scaling_corpus"]
    cache = os.path.join(ctx["tmp"], "scan-cache")
    ctx["empty"] = os.path.join(ctx["tmp"], "empty.log")
    open(ctx["empty"], "w").close()
    for s in SETS:
        scan_run(b, ctx["rules"][s]["dir"], ctx["check_corpus"], cache)
    rounds = []
    for i in range(runs):
        log("scaling: run %d/%d" % (i + 1, runs))
        wait_quiet(ctx["max_wait"])
        r = {}
        for s in SETS:
            rs = ctx["rules"][s]
            r[s] = {"faultline": scan_run(b, rs["dir"], path, cache), "hs": hs_scan(b, rs["progs"], path),
                    "empty": scan_run(b, rs["dir"], ctx["empty"], cache), "patterns": len(rs["patterns"])}
            fc = Run([b["fl_count"], "--rules", rs["dir"], "--cache", cache, "--levels", "--stages",
                      "decode,scan,pipeline", "--reps", "3", "--json", path])
            r[s]["stages"] = json.loads(fc.out)
        rounds.append(r)
    return {"rounds": rounds, "bytes": os.path.getsize(path), "lines": line_count(path)}


def section_startup(ctx: dict) -> dict:
    b, runs = ctx["bin"], ctx["runs"]
    rs = ctx["rules"]["catalog"]
    rounds = []
    for i in range(runs):
        log("startup: run %d/%d" % (i + 1, runs))
        wait_quiet(ctx["max_wait"])
        work = tempfile.mkdtemp(prefix="startup-", dir=ctx["tmp"])
        src = os.path.join(work, "serving.log")
        with open(src, "w") as f:
            f.write("INFO 11-29 10:08:01 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n")
        state = os.path.join(work, "state")
        r = {}
        for kind in ("cold", "cached", "cached2"):
            d = Daemon(b["faultline"], work, [src], rs["dir"], state=state)
            try:
                r[kind] = d.wait_ready(60, poll=0.001)
            finally:
                d.stop(timeout=20, strict=False)
        cache = os.path.join(work, "scan-cache")
        empty = os.path.join(work, "empty.log")
        open(empty, "w").close()
        r["scan_cold"] = scan_run(b, rs["dir"], empty, cache)["wall"]
        r["scan_cached"] = scan_run(b, rs["dir"], empty, cache)["wall"]
        r["scan_nocache"] = scan_run(b, rs["dir"], empty, None)["wall"]
        rounds.append(r)
        shutil.rmtree(work, ignore_errors=True)
    return {"rounds": rounds}
