"""bench suite, shared part: constants, machine facts, statistics, set-up (corpora, rule sets), the tools' runs
and the daemon plumbing. Imported by run_all.py and the suite's section and render modules."""
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
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peers  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import faultline_testlib as tl  # noqa: E402
from measure import HZ, Run, cpu_jiffies, wait_quiet  # noqa: E402

SETS = ["cat-20", "cat-100", "catalog", "cat-1000"]
ALL_SECTIONS = ["check", "scan", "corpora", "parallel", "peers", "scaling", "follow", "latency", "memory", "idle",
                "startup", "detector"]
BEGIN, END = "<!-- BEGIN run-all -->", "<!-- END run-all -->"
PEER_TOOLS = {"grep": "grep", "rg": "rg", "mtail": "mtail", "sec": "sec"}

PROBE_RULE = """# bench/run_all.py latency probe: every probe line is its own incident (key includes the probe id)
id: bench-latency-probe
title: "bench latency probe {probe}"
severity: critical
summary: >
  Probe {probe} written by bench/run_all.py.
events:
  probe:
    regex: 'FAULTLINE-BENCH-PROBE id=(?P<probe>[0-9]+) RuntimeError: synthetic failure'
key: [stream, "field:probe"]
lifetime: {quiet: 2s}   # resolved 2 s after: about 20 probe incidents open at a time, not one per probe ever sent
"""


def log(msg: str) -> None:
    print("[run_all] " + msg, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------- machine


def machine_info() -> dict:
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    osr = "?"
    try:
        with open("/etc/os-release") as f:
            m = re.search(r'PRETTY_NAME="([^"]+)"', f.read())
            osr = m.group(1) if m else "?"
    except OSError:
        pass

    def ver(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            return (r.stdout or r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "not installed"

    return {"cpu": cpu, "cores": os.cpu_count(), "os": osr, "kernel": os.uname().release,
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "mtail": ver(["mtail", "--version"]), "sec": ver(["sec", "-version"]), "rg": ver(["rg", "--version"]),
            "grep": ver(["grep", "--version"]), "python": sys.version.split()[0]}


def revisions(incidents) -> set:
    """Incident revisions as a daemon's and a scan's can be compared. Not the id: the daemon's ids include the node it
    runs on, a scan's do not. The same incident is the same rule, stream and first decisive line; the same revision
    has the same number and count."""
    return {(i["rule"], i["stream"], i["first_seen"], i["revision"], i.get("count", 1)) for i in incidents}


def verdict(name: str, figures: dict, ok: bool, write=None) -> int:
    """A standalone benchmark's end: its figures (JSON) and verdict printed, `write(figures, ok)` called when given;
    the exit status."""
    print(json.dumps(figures, indent=2))
    if write is not None:
        write(figures, ok)
    print("%s: %s" % (name, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


def write_figures(path: str, begin: str, end: str, title: str, intro: str, rows: list[tuple[str, str]], ok: bool,
                  compared: dict) -> None:
    """A standalone benchmark's section of RESULTS.md: its title, what it ran, a table of (figure, value) rows, the
    run's incident revisions against scan's (`compared`: revisions_run, revisions_scan, missing, extra) and the
    verdict."""
    c = compared
    rows = rows + [("incident revisions: run / scan (missing, extra)",
                    "%d / %d (%d, %d)" % (c["revisions_run"], c["revisions_scan"], c["missing"], c["extra"]))]
    table = ["| figure | value |", "|---|---|"] + ["| %s | %s |" % r for r in rows]
    table.append("| verdict | %s |" % ("PASS" if ok else "FAIL"))
    replace_marked(path, begin, end, "\n".join([begin, "## " + title, "", intro, ""] + table + [end]))


def replace_marked(path: str, begin: str, end: str, body: str) -> None:
    """Replaces the text from `begin` to `end` in the file at `path` with `body` (which holds both markers); appends
    `body` when the file has no such section."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if begin in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + body + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + body + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


# ------------------------------------------------------------------------------------------------ stats


# The bench machine switches between two speeds for seconds to minutes at a time (the same run takes 0.135 s or
# 0.20 s). A figure compared with another is therefore taken as the fastest of ALTERNATIONS runs of each, the tools
# run in turn (A B C A B C ...), so that both sides of a ratio get the same chances at the fast speed; each round
# keeps every run for the record.
ALTERNATIONS = 3
# Repetitions of each fl_count run that measures the pipeline and the raw limit in turn (corpora section): each gives
# one paired ratio, ALTERNATIONS x PAIRED_REPS of them a round.
PAIRED_REPS = 5


def alternate(measures: dict, key: dict, n: int = ALTERNATIONS) -> dict:
    """Runs each of `measures` (name -> function returning a dict) n times in turn; returns per name the run whose
    `key[name](run)` is smallest, with every run under "<name>_runs"."""
    runs = {name: [] for name in measures}
    for _ in range(n):
        for name, fn in measures.items():
            runs[name].append(fn())
    out = {}
    for name, rs in runs.items():
        out[name] = min(rs, key=key[name])
        out[name + "_runs"] = rs
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def fmt(xs, digits=0, unit=""):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    f = "%%.%df" % digits
    if len(xs) == 1:
        return (f % xs[0]) + unit
    return (f % med(xs)) + unit + " (" + (f % min(xs)) + "–" + (f % max(xs)) + ")"


def fmt_ratio(xs, digits=2):
    return fmt(xs, digits, "×")


def human(n: int) -> str:
    return "%gM" % (n / 1e6) if n >= 10**6 else "%gk" % (n / 1e3)


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# ------------------------------------------------------------------------------------------------ setup


def build(build_dir: str) -> dict:
    # Configured every time, not only the first: the commit `faultline version` prints (and the results record) is
    # taken when the tree is configured, and a build directory configured at an older commit would name that one.
    # (A directory already configured keeps its settings.)
    log("configuring %s (Release)" % build_dir)
    settings = [] if os.path.exists(os.path.join(build_dir, "CMakeCache.txt")) else [
        "-DCMAKE_BUILD_TYPE=Release", "-DFAULTLINE_BUILD_TESTS=OFF"]
    subprocess.run(["cmake", "-S", TOP, "-B", build_dir] + settings, check=True, stdout=subprocess.DEVNULL)
    log("building faultline, fl_count, hs_limit in %s" % build_dir)
    subprocess.run(["cmake", "--build", build_dir, "-j2", "--target", "faultline", "fl_count", "hs_limit"],
                   check=True, stdout=subprocess.DEVNULL)
    return {"faultline": os.path.join(build_dir, "faultline"), "fl_count": os.path.join(build_dir, "bench", "fl_count"),
            "hs_limit": os.path.join(build_dir, "bench", "hs_limit")}


def corpus(out: str, lines: int, seed: int, inject: float) -> str:
    path = os.path.join(out, "corpus-%d-s%d-i%g.log" % (lines, seed, inject))
    gen = os.path.join(HERE, "gen_corpus.py")
    if not os.path.exists(path) or os.path.getmtime(path) < os.path.getmtime(gen):
        log("generating %s" % path)
        subprocess.run([sys.executable, gen, "--lines", str(lines), "--seed", str(seed), "--inject", str(inject),
                        "--out", path + ".tmp", "--manifest", path[:-4] + ".manifest.json"], check=True)
        os.replace(path + ".tmp", path)
    return path


# The suite's corpora, each at 1M lines and at --lines: the suite's own generator, the second generator (a different
# mix: more benign tracebacks, more failures) raw, and the second wrapped as CRI and as docker json-file.
CORPORA = ["A", "B", "B-cri", "B-docker"]
CORPUS_NAMES = {"A": "`gen_corpus.py --seed 1 --inject 2e-05`", "B": "`gen_corpus_b.py --seed 1`",
                "B-cri": "B wrapped by `wrap_corpus.py --format cri`", "B-docker": "B wrapped by `wrap_corpus.py --format docker`"}


def corpus_of(out: str, name: str, lines: int) -> str:
    if name == "A":
        return corpus(out, lines, 1, 2e-5)
    raw = os.path.join(out, "corpus-b-%d-s1.log" % lines)
    gen = os.path.join(HERE, "gen_corpus_b.py")
    if not os.path.exists(raw) or os.path.getmtime(raw) < os.path.getmtime(gen):
        log("generating %s" % raw)
        subprocess.run([sys.executable, gen, "--lines", str(lines), "--seed", "1", "--out", raw + ".tmp"], check=True,
                       stderr=subprocess.DEVNULL)
        os.replace(raw + ".tmp", raw)
    if name == "B":
        return raw
    fmt_ = name.split("-", 1)[1]
    path = raw[:-4] + "." + fmt_
    wrap = os.path.join(HERE, "wrap_corpus.py")
    if not os.path.exists(path) or os.path.getmtime(path) < max(os.path.getmtime(raw), os.path.getmtime(wrap)):
        log("wrapping %s as %s" % (raw, fmt_))
        subprocess.run([sys.executable, wrap, "--format", fmt_, raw, path], check=True)
    return path


def rulesets(out: str, fl_count: str, sets: list[str]) -> dict:
    d = os.path.join(out, "rulesets")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_rulesets.py"), "--out", d, "--fl-count", fl_count,
                    "--sets", ",".join(sets)], check=True, stdout=subprocess.DEVNULL)
    res = {}
    for s in sets:
        pats = peers.read_tsv(os.path.join(d, s, "patterns.tsv"))
        progs = peers.write_programs(pats, os.path.join(d, s, "progs"))
        res[s] = {"dir": os.path.join(d, s), "patterns": pats, "progs": progs}
    return res


def probe_rules(out: str, catalog_dir: str) -> str:
    d = os.path.join(out, "rulesets", "catalog+probe")
    if os.path.isdir(d):
        shutil.rmtree(d)
    shutil.copytree(catalog_dir, d, ignore=shutil.ignore_patterns("progs", "patterns.tsv"))
    with open(os.path.join(d, "bench-latency-probe.yaml"), "w") as f:
        f.write(PROBE_RULE)
    return d


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def line_count(path: str) -> int:
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 22)
            if not b:
                return n
            n += b.count(b"\n")


def head_file(src: str, dst: str, lines: int) -> str:
    if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
        return dst
    with open(src, "rb") as f, open(dst + ".tmp", "wb") as g:
        for i, line in enumerate(f):
            if i >= lines:
                break
            g.write(line)
    os.replace(dst + ".tmp", dst)
    return dst


# ----------------------------------------------------------------------------------------------- tools


def fl_counts(b: dict, rules: str, path: str) -> dict:
    r = Run([b["fl_count"], "--rules", rules, "--counts", "--json", path])
    doc = json.loads(r.out)
    return {"counts": [c["lines"] for c in doc["counts"]], "union": doc["union_lines"], "records": doc["records"],
            "lines": doc["lines"]}


def hs_counts(b: dict, progs: dict, path: str) -> list[int]:
    r = Run([b["hs_limit"], "--strategies", "perline", "--counts", progs["hs"], path])
    return [int(line.split("\t")[1]) for line in r.out.splitlines() if re.match(r"^\d+\t", line)]


def grep_counts(pats: list[dict], progs: dict, path: str) -> list[int]:
    env = dict(os.environ, LC_ALL="C")
    with open(progs["ere_ci"], encoding="utf-8") as f:
        eres = [line.rstrip("\n") for line in f]
    counts = []
    for p, ere in zip(pats, eres):
        cmd = ["grep", "-E", "-c"] + (["-i"] if p["caseless"] else []) + ["-e", ere, path]
        r = Run(cmd, ok=(0, 1), env=env)  # stdout to a pipe: grep -c stops early only when writing to /dev/null
        counts.append(int(r.out.strip() or 0))
    return counts


def grep_union(progs: dict, path: str) -> tuple[int, Run]:
    """Lines hit by any pattern, by GNU grep: the union of each pattern's line numbers. (One `grep -E -f` over the
    whole catalog builds a DFA of every pattern at once, which grows exponentially with the catalog's bounded
    repeats: minutes for 253 patterns where each alone takes milliseconds.)"""
    env = dict(os.environ, LC_ALL="C")
    with open(progs["ere"], encoding="utf-8") as f:
        eres = [line.rstrip("\n") for line in f if line.strip()]
    lines: set[int] = set()
    runs = []
    for ere in eres:
        r = Run(["grep", "-E", "-n", "-e", ere, path], ok=(0, 1), env=env)
        lines.update(int(l.split(":", 1)[0]) for l in r.out.splitlines() if l)
        r.out = ""
        runs.append(r)
    total = runs[-1]  # its wall and CPU times are the sums over every pattern's run (what grep costs on the set)
    total.wall, total.cpu = sum(x.wall for x in runs), sum(x.cpu for x in runs)
    total.others = sum(x.others * x.wall for x in runs) / max(total.wall, 1e-9)
    return len(lines), total


def rg_counts(progs: dict, path: str) -> list[int]:
    with open(progs["rust"], encoding="utf-8") as f:
        pats = [line.rstrip("\n") for line in f]
    counts = []
    for p in pats:
        r = Run(["rg", "--no-config", "-c", "-e", p, path], ok=(0, 1))
        counts.append(int(r.out.strip() or 0))
    return counts


def rg_union(progs: dict, path: str) -> tuple[int, Run]:
    r = Run(["rg", "--no-config", "-c", "-f", progs["rust"], path], ok=(0, 1))
    return int(r.out.strip() or 0), r


def mtail_run(progs: dict, path: str, n: int) -> tuple[list[int], Run]:
    r = Run(["mtail", "--one_shot", "--one_shot_format", "prometheus", "--progs", progs["mtail"], "--logs", path,
             "--logtostderr", "--address", "127.0.0.1", "--port", "0"])
    return peers.parse_mtail(r.out, n), r


def sec_run(progs: dict, path: str, n: int, tmp: str) -> tuple[list[int], Run]:
    counts_path = os.path.join(tmp, "sec-counts.tsv")
    if os.path.exists(counts_path):
        os.remove(counts_path)
    env = dict(os.environ, FL_SEC_COUNTS=counts_path)
    r = Run(["sec", "--conf=" + progs["sec"], "--input=" + path, "--notail", "--intevents", "--log=/dev/null"], env=env)
    counts = [0] * n
    with open(counts_path) as f:
        for line in f:
            i, c = line.split("\t")
            counts[int(i)] = int(c)
    return counts, r


def scan_run(b: dict, rules: str, path: str, cache: str | None, jobs: int | None = 1) -> dict:
    """`faultline scan` on one thread (`-j 1`, the figure compared with the one-thread raw limit) unless `jobs` says
    otherwise (None: the default, every core)."""
    cmd = [b["faultline"], "scan", "--rules", rules] + (["--cache", cache] if cache else ["--no-cache"]) + \
        (["-j", str(jobs)] if jobs else []) + [path]
    r = Run(cmd, ok=(0, 1), stdout=subprocess.DEVNULL)
    m = re.search(r"faultline: (\d+) incident.* in (\d+) lines, (\d+) bytes, (\d+) rules, (\d+) ms", r.err)
    if not m:
        raise RuntimeError("faultline scan printed no summary:\n" + r.err[-2000:])
    return {"wall": r.wall, "cpu": r.cpu, "others": r.others, "incidents": int(m.group(1)), "lines": int(m.group(2)),
            "bytes": int(m.group(3)), "self_ms": int(m.group(5))}


def hs_scan(b: dict, progs: dict, path: str, split: bool = False, engine: str = "library") -> dict:
    """The raw limit (hs_limit buffered). engine: "library" (hs_scan, the engine the library picks) or "avx2" (its AVX2
    engine, as faultline scans where the library would pick its AVX-512 one)."""
    r = Run([b["hs_limit"], "--strategies", "split,buffered" if split else "buffered", "--reps", "3", "--engine", engine,
             "--json", progs["hs"], path])
    doc = json.loads(r.out)
    st = [s for s in doc["strategies"] if s["name"] == "buffered"][0]
    out = {"wall": r.wall, "cpu": r.cpu, "others": r.others, "scan_wall": st["seconds"],
           "scan_cpu": st.get("cpu_seconds"), "bytes": doc["bytes"], "compile_s": doc["compile"]["block"]["seconds"]}
    if split:
        sp = [s for s in doc["strategies"] if s["name"] == "split"][0]
        out["split_cpu"] = sp.get("cpu_seconds")
    return out


# ---------------------------------------------------------------------------------------------- daemon


def Daemon(exe: str, workdir: str, sources: list[str], rules: str, extra: list[str] | None = None,
           state: str | None = None) -> tl.Daemon:
    """`faultline run` as the benchmarks run it: every source from its beginning, no incident output, warnings only.
    Started, not yet waited for (wait_ready() returns the seconds it took)."""
    state = state or os.path.join(workdir, "state")
    os.makedirs(state, exist_ok=True)
    port = tl.free_port()
    args = ["--start-at", "beginning"] + [a for s in sources for a in ("--source", s)] + (extra or [])
    return tl.Daemon(tl.Workdir(path=workdir), args, name="daemon-%d" % port, port=port, rules=rules, state=state,
                     output="off", log_level="warn", exe=exe).start(wait=False)


def read_chars(pid: int) -> int:
    """Bytes the process has read so far (/proc/PID/io rchar)."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def wait_read(d: tl.Daemon, target: int, timeout: float, poll: float = 0.005) -> tuple[bool, float]:
    """Polls /proc/<pid>/io until the daemon has read `target` bytes in all (the metrics publish their byte and line
    counts once a second: a wait on them ends on a tick). Returns (reached, monotonic time seen)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if read_chars(d.pid) >= target:
            return True, time.monotonic()
        if d.proc.poll() is not None:
            raise RuntimeError("faultline run exited:\n" + d.log_text(3000))
        time.sleep(poll)
    return False, time.monotonic()


def wait_metric(d: tl.Daemon, name: str, target: float, timeout: float, poll: float = 0.05) -> tuple[bool, float, dict]:
    """Polls /metrics until `name` >= target. Returns (reached, monotonic time seen, metrics)."""
    deadline = time.monotonic() + timeout
    m: dict = {}
    while time.monotonic() < deadline:
        try:
            m = d.metrics().totals()
        except OSError:
            m = {}
        if m.get(name, 0) >= target:
            return True, time.monotonic(), m
        if d.proc.poll() is not None:
            raise RuntimeError("faultline run exited:\n" + d.log_text(3000))
        time.sleep(poll)
    return False, time.monotonic(), m

