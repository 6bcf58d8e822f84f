"""`scan` reads logs as they are on disk: gzip and zstd (told by their first bytes, whatever the name; concatenated
members too), and says when it cannot read an input (exit 2, naming it) instead of reporting it clean: a cut-short
or corrupt archive, xz or bzip2. --since/--until select incidents by event time. CLI conventions: with --json,
standard output is JSON lines only (--explain goes to standard error); NO_COLOR and --color; `--version` and `-V`
print the version and the commit."""
import gzip
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

LINES = "".join("2026-12-01T10:%02d:00Z LINE %d something\n" % (i, i) for i in range(1, 6))


def scan(work, *args, input=None):
    return tl.run("scan", "--rules", work.rules, *args, input=input, text=False, timeout=120)


def numbers(stdout):
    return sorted(int(json.loads(l)["fields"]["n"]) for l in stdout.decode().splitlines() if l.strip())


def test(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    plain = work.file("app.log", LINES)
    data = LINES.encode()

    # gzip: by suffix and without one (magic bytes), one member and two concatenated, and from standard input.
    gz = os.path.join(work.path, "app.log.1.gz")
    with open(gz, "wb") as f:
        f.write(gzip.compress(data))
    renamed = os.path.join(work.path, "app.log.1")
    shutil.copy(gz, renamed)
    two = os.path.join(work.path, "two.gz")
    with open(two, "wb") as f:
        f.write(gzip.compress(data[:len(data) // 2]) + gzip.compress(data[len(data) // 2:]))
    for path in (gz, renamed, two):
        p = scan(work, "--json", path)
        check(p.returncode == 1 and numbers(p.stdout) == [1, 2, 3, 4, 5],
              "%s: exit %d, %s %s" % (path, p.returncode, p.stdout[:300], p.stderr[-500:]))
    with open(gz, "rb") as f:
        p = scan(work, "--json", "-", input=f.read())
    check(p.returncode == 1 and numbers(p.stdout) == [1, 2, 3, 4, 5], "gzip on stdin: %s" % p.stderr[-500:])

    # zstd.
    zstd = shutil.which("zstd")
    if zstd:
        zst = os.path.join(work.path, "app.log.zst")
        subprocess.run([zstd, "-q", "-f", plain, "-o", zst], check=True)
        p = scan(work, "--json", zst)
        check(p.returncode == 1 and numbers(p.stdout) == [1, 2, 3, 4, 5], "zstd: %s" % p.stderr[-500:])
        with open(zst, "rb") as f:
            whole = f.read()
        cut = work.file("cut.zst", "")
        with open(cut, "wb") as f:
            f.write(whole[:len(whole) - 4])
        p = scan(work, cut)
        check(p.returncode == 2 and b"cannot read" in p.stderr and b"zstd" in p.stderr,
              "a cut-short zstd file: %d %s" % (p.returncode, p.stderr[-500:]))
    else:
        raise tl.Skip("zstd is not installed (scripts/packages-test.txt)")

    # A cut-short gzip file, a corrupt one, xz and bzip2: an error naming the input, never "0 incident(s)".
    with open(gz, "rb") as f:
        whole = f.read()
    bad = {
        "cut.gz": whole[:len(whole) // 2],
        "corrupt.gz": whole[:12] + b"\xff" * 40 + whole[52:],
        "x.log.xz": b"\xfd7zXZ\x00" + b"\x00" * 30,
        "x.log.bz2": b"BZh91AY&SY" + b"\x00" * 30,
    }
    for name, content in bad.items():
        path = os.path.join(work.path, name)
        with open(path, "wb") as f:
            f.write(content)
        p = scan(work, path)
        err = p.stderr.decode()
        check(p.returncode == 2 and "cannot read " + path in err, "%s: exit %d, %s" % (name, p.returncode, err))
        check("0 incident(s)" not in err, "%s reported clean: %s" % (name, err))
    check("xz -dc" in scan(work, os.path.join(work.path, "x.log.xz")).stderr.decode(), "no hint for xz")

    # --since/--until on event time.
    p = scan(work, "--json", "--since", "2026-12-01T10:02:00Z", "--until", "2026-12-01T10:04:00Z", plain)
    check(p.returncode == 1 and numbers(p.stdout) == [2, 3], "--since/--until: %s %s" % (p.stdout, p.stderr))
    p = scan(work, "--since", "2027-01-01T00:00:00Z", plain)
    check(p.returncode == 0 and b"0 incident(s) in the --since/--until window" in p.stderr,
          "an empty window: %d %s" % (p.returncode, p.stderr))

    # --json keeps standard output JSON only, with --explain too.
    p = scan(work, "--json", "--explain", plain)
    for line in p.stdout.decode().splitlines():
        try:
            json.loads(line)
        except ValueError:
            check(False, "not JSON on standard output with --json --explain: %r" % line)
    check(b"explain: " in p.stderr, "--explain lines are not on standard error")

    # Colour: never by default on a pipe, on with --color=always, off with NO_COLOR unless --color=always.
    check(b"\x1b[" not in scan(work, plain).stdout, "colour on a pipe")
    check(b"\x1b[" in scan(work, "--color=always", plain).stdout, "--color=always gave no colour")
    env = dict(os.environ, NO_COLOR="1")
    p = tl.run("scan", "--rules", work.rules, "--color", "auto", plain, text=False, env=env)
    check(b"\x1b[" not in p.stdout, "colour with NO_COLOR")
    p = tl.run("scan", "--rules", work.rules, "--color", "sometimes", plain)
    check(p.returncode == 2 and "--color" in p.stderr, "a bad --color value: %s" % p.stderr)

    # --version, -V and `version`: the version and the commit ("unknown" outside a git checkout).
    for argv in (["--version"], ["-V"], ["version"]):
        p = tl.run(*argv)
        check(p.returncode == 0 and p.stdout.startswith("faultline ") and "(commit " in p.stdout
              and " )" not in p.stdout, "%s: %r" % (argv, p.stdout))
    commit = tl.run("--version").stdout.split("(commit ")[1].split(",")[0]
    head = subprocess.run(["git", "-C", tl.SOURCE_DIR, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode == 0:
        # Taken when the build was configured: an ancestor of (or equal to) HEAD, or HEAD with local changes.
        check(commit == "unknown" or len(commit.split("-")[0]) == 12, "commit %r" % commit)
    else:
        check(commit == "unknown", "outside a git checkout the commit is %r" % commit)


if __name__ == "__main__":
    tl.main(test)
