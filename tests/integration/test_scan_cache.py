#!/usr/bin/env python3
"""`scan`'s per-user cache of the compiled rule database and the parsed rule files: $XDG_CACHE_HOME/faultline (else ~/.cache/faultline) by
default, `--no-cache` to use none. A hit reads the database and writes nothing; rules that change compile under a
new key (the old entry is never loaded for them); a corrupt entry is compiled (or parsed) again and replaced; writers racing on
an empty cache leave one whole entry of each and no temporary file; a cache that cannot be written is a warning, and the
scan goes on."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

RULE = """id: cache-test
title: cache test
severity: critical
events:
  boom: '%s'
sequence:
  - event: boom
tests:
  - name: fires
    lines: "x %s"
    expect: [{rule: cache-test}]
"""


def test(work):
    env0 = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "HOME")}
    rules = work.file("r.yaml", RULE % ("BOOM one", "BOOM one"))
    log = work.file("in.log", "a line\nBOOM one here\n")

    def scan(env, *extra, rules_path=rules):
        return subprocess.run([tl.binary(), "scan", "--rules", rules_path, *extra, log], env=env,
                              capture_output=True, text=True, timeout=120)

    def entries(d):
        return sorted(f for f in os.listdir(d)) if os.path.isdir(d) else []

    def kinds(names):
        # A rule set's entries: its compiled database and its parsed rule files.
        return sorted("db" if n.endswith(".hsdb") else "parsed" if n.startswith("parsed-") and n.endswith(".bin")
                      else n for n in names)

    # Miss, then hit: XDG_CACHE_HOME first.
    xdg = os.path.join(work.path, "xdg")
    env = dict(env0, XDG_CACHE_HOME=xdg, HOME=os.path.join(work.path, "home"))
    p = scan(env)
    tl.check(p.returncode == 1, "scan finds the incident (%d): %s" % (p.returncode, p.stderr))
    cache = os.path.join(xdg, "faultline")
    made = entries(cache)
    tl.check(kinds(made) == ["db", "parsed"],
             "a miss writes the database and the parsed rules under $XDG_CACHE_HOME: %s" % made)
    entry = os.path.join(cache, [n for n in made if n.endswith(".hsdb")][0])
    parsed = os.path.join(cache, [n for n in made if n.startswith("parsed-")][0])
    before = {n: os.stat(os.path.join(cache, n)).st_mtime_ns for n in made}
    p = scan(env)
    tl.check(p.returncode == 1 and entries(cache) == made and
             all(os.stat(os.path.join(cache, n)).st_mtime_ns == t for n, t in before.items()),
             "a hit reads the entries and writes nothing")
    tl.check(not os.path.exists(os.path.join(work.path, "home")), "with XDG_CACHE_HOME set, ~/.cache is not used")

    # ~/.cache/faultline without XDG_CACHE_HOME; nothing with --no-cache.
    home = os.path.join(work.path, "home2")
    p = scan(dict(env0, HOME=home))
    tl.check(p.returncode == 1 and kinds(entries(os.path.join(home, ".cache", "faultline"))) == ["db", "parsed"],
             "without XDG_CACHE_HOME the entries are under ~/.cache/faultline")
    home3 = os.path.join(work.path, "home3")
    p = scan(dict(env0, HOME=home3), "--no-cache")
    tl.check(p.returncode == 1 and not os.path.exists(home3), "--no-cache reads and writes no cache")

    # Changed rules: a new key; the old entry stays and is not loaded for them (the new pattern is what matches).
    changed = work.file("r2.yaml", RULE % ("BOOM two", "BOOM two"))
    p = scan(env, rules_path=changed)
    tl.check(p.returncode == 0, "changed rules are compiled afresh, not read from the old entry (%d)" % p.returncode)
    tl.check(len(entries(cache)) == 4 and set(made) <= set(entries(cache)),
             "they get entries of their own: %s" % entries(cache))

    # A corrupt entry: a warning, compiled again, the entry replaced by a whole one.
    with open(entry, "wb") as f:
        f.write(b"not a database")
    rules = work.file("r.yaml", RULE % ("BOOM one", "BOOM one"))
    p = scan(env)
    tl.check(p.returncode == 1 and "unusable compiled-rules cache" in p.stderr, "a corrupt entry is a warning: %s"
             % p.stderr.strip()[-300:])
    tl.check(os.path.getsize(entry) > 1000, "the corrupt entry is replaced (%d bytes)" % os.path.getsize(entry))
    p = scan(env)
    tl.check(p.returncode == 1 and "unusable" not in p.stderr, "the replaced entry loads")
    # A damaged parsed-rules entry is a miss: the files are parsed again and the entry replaced.
    size = os.path.getsize(parsed)
    with open(parsed, "r+b") as f:
        f.truncate(size // 2)
    p = scan(env)
    tl.check(p.returncode == 1 and "error" not in p.stderr, "a cut parsed-rules entry is parsed again: %s"
             % p.stderr.strip()[-300:])
    tl.check(os.path.getsize(parsed) == size, "and replaced by a whole one (%d of %d bytes)"
             % (os.path.getsize(parsed), size))

    # Writers racing on an empty cache: every scan succeeds, one whole entry, no temporary file left.
    race = os.path.join(work.path, "race")
    renv = dict(env0, XDG_CACHE_HOME=race)
    procs = [subprocess.Popen([tl.binary(), "scan", "--rules", rules, log], env=renv, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stderr.close()
    tl.check(all(rc == 1 for rc, _ in results), "8 concurrent scans all find the incident: %s" % [r for r, _ in results])
    tl.check(not any("unusable" in e for _, e in results), "no scan read a half-written entry")
    got = entries(os.path.join(race, "faultline"))
    tl.check(kinds(got) == ["db", "parsed"], "one entry of each and no temporary file after the race: %s" % got)
    p = scan(renv)
    tl.check(p.returncode == 1 and "unusable" not in p.stderr, "the raced entry loads")

    # A cache that cannot be written (its directory is a file): a warning, and the scan goes on.
    blocker = work.file("blocker", "a file, not a directory\n")
    p = scan(dict(env0, XDG_CACHE_HOME=blocker))
    tl.check(p.returncode == 1, "an unusable cache directory does not fail the scan (%d)" % p.returncode)
    tl.check("cannot write compiled-rules cache" in p.stderr, "it is a warning: %s" % p.stderr.strip()[-300:])


if __name__ == "__main__":
    tl.main(test)
