"""A first run explains itself: `run` logs, per file, where it starts reading and why (the end of an existing file,
the checkpoint, the beginning); an explicit --start-at that a checkpoint overrides is a warning saying how to read
again; sources whose globs match nothing are a warning naming them (once, not every rescan). On a terminal, `run`
prints incidents as the text blocks `scan` prints; piped (or with --output), JSON lines."""
import json
import os
import pty
import select
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402


def messages(daemon, level=None):
    return [l.get("msg", "") for l in daemon.log_lines() if level is None or l.get("level") == level]


def wait_logged(daemon, text, what):
    tl.wait_until(lambda: daemon.logged(text), timeout=20, what=what,
                  alive=daemon.proc)
    return [m for m in messages(daemon) if text in m]


def start_positions(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    work.append("LINE 1 already there", "LINE 2 already there")
    source = os.path.join(work.logs, "*.log")

    # First start, default start_at end: the existing file is read from its end, and the log says so and how not to.
    d = tl.Daemon(work, ["--source", source], name="first")
    d.start()
    said = wait_logged(d, "starting at its end", "the start position of app.log")
    check(work.log_file in said[0] and "--start-at beginning" in said[0], "start at end not explained: %s" % said)
    # A file that appears later is read from its beginning, and that is said too.
    work.append("LINE 3", path=os.path.join(work.logs, "new.log"))
    wait_logged(d, "a new file", "the start position of new.log")
    check(d.stop() == 0, "first run did not stop cleanly")

    # Restart with --start-at beginning: the checkpoint decides, and a warning says so and how to read again.
    d2 = tl.Daemon(work, ["--source", source, "--start-at", "beginning"], name="second")
    d2.start()
    resumed = wait_logged(d2, "where the checkpoint left it", "the resumed position of app.log")
    check(any(work.log_file in m for m in resumed), "app.log not said to resume: %s" % resumed)
    warnings = [m for m in messages(d2, "warning") if "--start-at beginning" in m]
    check(warnings, "no warning that the checkpoint overrides --start-at:\n%s" % d2.log_text())
    check(os.path.join(work.state, "checkpoint.json") in warnings[0] and work.state in warnings[0]
          and "remove the state dir" in warnings[0], "the warning does not say how to re-read: %s" % warnings[0])
    check(d2.stop() == 0, "second run did not stop cleanly")

    # Without --start-at, a restart does not warn.
    d3 = tl.Daemon(work, ["--source", source], name="third")
    d3.start()
    wait_logged(d3, "where the checkpoint left it", "the resumed position (third run)")
    check(not [m for m in messages(d3, "warning") if "--start-at" in m], "warned without --start-at")
    check(d3.stop() == 0, "third run did not stop cleanly")


def no_match(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    glob = os.path.join(work.path, "nowhere", "*.log")
    d = tl.Daemon(work, ["--source", glob], name="nomatch", state=os.path.join(work.path, "state-nomatch"))
    d.start()
    said = wait_logged(d, "no file matches", "the no-match warning")
    check(glob in said[0], "the warning does not name the glob: %s" % said[0])
    # Once a file matches, it is read; until then the globs were looked at again every rescan without the warning
    # being repeated (it comes again only after minutes).
    os.makedirs(os.path.dirname(glob))
    work.append("LINE 7", path=os.path.join(os.path.dirname(glob), "late.log"))
    d.wait_incidents(1, what="the incident from the file that appeared")
    said = [m for m in messages(d) if "no file matches" in m]
    check(len(said) == 1, "the warning repeats: %s" % said)
    check(d.stop() == 0, "did not stop cleanly")


def read_all(fd, proc, timeout=30):
    out = b""
    deadline = tl.time.monotonic() + timeout * tl.TIME_SCALE
    while tl.time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def run_on_terminal(argv, stdin_bytes, **spawn_args):
    """Runs argv with standard output on a pseudo-terminal; (the finished process, what it printed there)."""
    master, slave = pty.openpty()
    p = tl.spawn(argv, stdin=subprocess.PIPE, stdout=slave, **spawn_args)
    os.close(slave)
    p.stdin.write(stdin_bytes)
    p.stdin.close()
    out = read_all(master, p).decode("utf-8", "replace")
    p.wait(timeout=30)
    os.close(master)
    return p, out


def text_on_a_terminal(work):
    work.write_rule("every.yaml", tl.EVERY_LINE_RULE)
    lines = b"LINE 41 first\nLINE 42 second\n"
    base = [tl.binary(), "run", "-", "--rules", work.rules, "--listen", "off", "--log-level", "warn",
            "--state-dir", os.path.join(work.path, "state-tty")]

    # stdout a terminal: the text blocks of scan, no JSON.
    p, out = run_on_terminal(base, lines, stderr=subprocess.PIPE, env=dict(os.environ, NO_COLOR="1"))
    check(p.returncode == 0, "run on a terminal exited %s: %s" % (p.returncode, p.stderr.read()))
    check("[WARNING] line 41" in out and "rule:      every-line" in out, "no text block on the terminal:\n%s" % out)
    check('{"' not in out, "JSON on the terminal:\n%s" % out)
    check("\x1b[" not in out, "colour despite NO_COLOR:\n%r" % out)

    # stdout a pipe: JSON lines.
    p = tl.run(*base[1:], input=lines.decode(), timeout=60)
    check(p.returncode == 0, "run on a pipe exited %s: %s" % (p.returncode, p.stderr))
    got = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    check(sorted(i["fields"]["n"] for i in got) == ["41", "42"], "JSON lines on a pipe: %s" % p.stdout)

    # A terminal, but --output -: JSON lines as asked.
    p, out = run_on_terminal(base + ["--output", "-"], lines, stderr=subprocess.DEVNULL)
    check(out.lstrip().startswith('{"') and "[WARNING]" not in out, "--output - on a terminal is not JSON:\n%s" % out)


def test(work):
    start_positions(work)
    for name, part in (("nomatch", no_match), ("tty", text_on_a_terminal)):
        w = tl.Workdir(name)
        try:
            part(w)
        finally:
            w.run_cleanups()
            w.cleanup()


if __name__ == "__main__":
    tl.main(test)
