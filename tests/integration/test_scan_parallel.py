#!/usr/bin/env python3
"""`scan -j N`: the parts of a file are decoded and matched on N threads and correlated in input order, so the
incidents are those of `-j 1`, byte for byte (`--json`: every revision, in order). Checked on the real corpus (every
file in one scan), on generated serving logs (raw, CRI and docker json-file with long lines split into P fragments,
and the second generator's mix), and on a log built so that real failure stories straddle the places where the
parts of a file begin."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

BENCH = os.path.join(tl.SOURCE_DIR, "bench")
REAL = os.path.join(tl.SOURCE_DIR, "tests", "corpus", "real")
PART = 16 * 256 * 1024  # bytes of a part (16 batches of 256 KiB): where a file's parts begin
tally = tl.Tally()
check = tally.check


def scan_json(paths, jobs, cache):
    p = tl.run("scan", "--json", "--cache", cache, "-j", jobs, *paths, text=False, timeout=600)
    return p.returncode, p.stdout, p.stderr


def same(paths, what, cache, jobs=(2, 4, 7)):
    rc1, one, err1 = scan_json(paths, 1, cache)
    check(rc1 in (0, 1), "%s: -j 1 exits 0 or 1 (%d) %s" % (what, rc1, err1.decode()[-300:]))
    for j in jobs:
        rc, out, _ = scan_json(paths, j, cache)
        check(rc == rc1 and out == one, "%s: -j %d gives the same %d bytes of --json as -j 1 (got %d, exit %d)"
              % (what, j, len(one), len(out), rc))
    return one


with tempfile.TemporaryDirectory() as tmp:
    cache = os.path.join(tmp, "cache")
    real = sorted(os.path.join(REAL, f) for f in os.listdir(REAL) if f.endswith(".log"))
    one = same(real, "the real corpus (%d files in one scan)" % len(real), cache)
    check(one.count(b"\n") >= 100, "the real corpus raises incidents (%d revisions)" % one.count(b"\n"))

    gen = os.path.join(BENCH, "gen_corpus.py")
    for fmt in ("raw", "cri", "docker"):
        path = os.path.join(tmp, "gen." + fmt)
        subprocess.run([sys.executable, gen, "--lines", "120000", "--inject", "5e-4", "--seed", "5", "--format", fmt,
                        "--split-at", "600", "--out", path], check=True, stderr=subprocess.DEVNULL)
        size = os.path.getsize(path)
        out = same([path], "generated %s log (%.0f MB, %d parts)" % (fmt, size / 1e6, size // PART + 1), cache)
        check(out.count(b"\n") >= 20, "generated %s log raises incidents (%d revisions)" % (fmt, out.count(b"\n")))
    b = os.path.join(tmp, "gen-b.log")
    subprocess.run([sys.executable, os.path.join(BENCH, "gen_corpus_b.py"), "--lines", "100000", "--seed", "1",
                    "--out", b], check=True, stderr=subprocess.DEVNULL)
    same([b], "second generator's log", cache)

    # Real failure stories laid across the first three part starts: benign filler up to a few KB before each start,
    # then a whole real log (traceback, fatal line and all), then filler again.
    filler = os.path.join(tmp, "filler.log")
    subprocess.run([sys.executable, gen, "--lines", "150000", "--inject", "0", "--seed", "9", "--out", filler],
                   check=True, stderr=subprocess.DEVNULL)
    names = ("fmha_unsupported_arch__hydralisk-sm120-repro.log", "fmha_unsupported_arch__trtllm-320.log",
             "fmha_unsupported_arch__vllm-pr31740-trace.log")
    stories = [os.path.join(REAL, f) for f in names if os.path.exists(os.path.join(REAL, f))] or real[:3]
    stories = (stories * 3)[:3]
    built = os.path.join(tmp, "straddling.log")
    with open(filler, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    with open(built, "wb") as g:
        size, k, i = 0, 1, 0
        while i < len(lines):
            story = open(stories[k - 1], "rb").read() if k <= 3 else b""
            if story and size + len(lines[i]) > k * PART - len(story) // 2:
                if not story.endswith(b"\n"):
                    story += b"\n"
                g.write(story)
                size += len(story)
                k += 1
                continue
            g.write(lines[i])
            size += len(lines[i])
            i += 1
    check(k > 3, "the built log holds a story across each of the first three part starts")
    out = same([built], "real stories across part starts", cache, jobs=(2, 4))
    check(b"fmha" in out, "the stories across part starts raise their incident (%d revisions)" % out.count(b"\n"))

tally.finish()
