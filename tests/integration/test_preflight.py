"""`run --check-config` and `check --config` fail on everything `run` would refuse — a listen address without a host,
a state dir that cannot be created, rule ids in sink filters and overrides that no loaded rule has (with "did you
mean") — each at its file:line:column, and have no side effects: no state dir, no compiled-rules cache written."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402
from faultline_testlib import check  # noqa: E402

RULE = """
id: cuda-out-of-memory
title: "out of memory"
severity: critical
events:
  oom:
    regex: 'CUDA out of memory'
"""

OTHER = """
id: nccl-watchdog-timeout
title: "nccl"
severity: critical
events:
  t:
    regex: 'Watchdog caught collective operation timeout'
"""

BAD = """\
listen: 9464
state_dir: /proc/faultline-nope/state
rules:
  overrides:
    nccl-watchdog-timout:
      severity: warning
    nccl-watchdog-timeout:
      enabled: false
sinks:
  - name: oncall
    url: http://127.0.0.1:9/hook
    rules: [cuda-oom, nccl-watchdog-timeout, gpu-fell-off]
"""

EXPECT = [
    (1, 9, "listen: expected host:port, got '9464' (did you mean 127.0.0.1:9464?"),
    (2, 12, "cannot create the state dir /proc/faultline-nope/state"),
    (5, 5, "no loaded rule has the id 'nccl-watchdog-timout' (did you mean 'nccl-watchdog-timeout'?)"),
    (12, 13, "no loaded rule has the id 'cuda-oom'"),
    (12, 46, "no loaded rule has the id 'gpu-fell-off'"),
]


def positioned(text, cfg, line, col, message):
    return re.search(re.escape("%s:%d:%d: error: " % (cfg, line, col)) + ".*" + re.escape(message), text)


def test(work):
    work.write_rule("oom.yaml", RULE)
    work.write_rule("nccl.yaml", OTHER)
    cfg = work.file("bad.yaml", BAD)

    # The listen address is refused as the file is decoded: the same for run, --check-config and check.
    for argv in (["run", "--config", cfg, "--rules", work.rules, "--check-config"],
                 ["check", "--config", cfg, work.rules]):
        p = tl.run(*argv, timeout=60)
        check(p.returncode == 2, "%s: exit %d, expected 2:\n%s" % (argv[0], p.returncode, p.stderr))
        check(positioned(p.stderr, cfg, *EXPECT[0]), "%s: listen not reported at 1:9:\n%s" % (argv[0], p.stderr))

    # With a good listen address, everything else at once.
    with open(cfg, "w") as f:
        f.write(BAD.replace("listen: 9464", "listen: 127.0.0.1:0"))
    for argv in (["run", "--config", cfg, "--rules", work.rules, "--check-config"],
                 ["check", "--config", cfg, work.rules]):
        p = tl.run(*argv, timeout=60)
        check(p.returncode != 0, "%s accepted the config:\n%s" % (argv[0], p.stderr))
        for line, col, message in EXPECT[1:]:
            check(positioned(p.stderr, cfg, line, col, message),
                  "%s: missing %d:%d %r in:\n%s" % (argv[0], line, col, message, p.stderr))
        # The disabled rule is known: a sink may name it.
        check("'nccl-watchdog-timeout'" not in p.stderr.replace("did you mean 'nccl-watchdog-timeout'", ""),
              "a rule disabled by an override was reported unknown:\n%s" % p.stderr)
        check("warning" not in p.stderr, "the unknown override is reported twice (warning and error):\n%s" % p.stderr)

    # run itself refuses what the pre-flight refuses.
    state = os.path.join(work.path, "state-run")
    with open(cfg, "w") as f:
        f.write("listen: 127.0.0.1:0\nsinks:\n  - url: http://127.0.0.1:9/hook\n    rules: [cuda-oom]\n")
    p = tl.run("run", "--config", cfg, "--rules", work.rules, "--state-dir", state, "--source",
               os.path.join(work.logs, "*.log"), "--log-format", "json", timeout=60)
    check(p.returncode == 2 and "did you mean 'cuda-out-of-memory'" in p.stderr,
          "run started with an unknown rule id in a sink (exit %d):\n%s" % (p.returncode, p.stderr))

    # --listen given as a bare port: refused with the hint.
    p = tl.run("run", "--listen", "9464", "--check-config", timeout=60)
    check(p.returncode == 2 and "127.0.0.1:9464" in p.stderr, "--listen 9464: %d %s" % (p.returncode, p.stderr))

    # No side effects: a valid config checked leaves no state dir and no cache behind.
    fresh = os.path.join(work.path, "fresh", "state")
    with open(cfg, "w") as f:
        f.write("listen: 127.0.0.1:0\nstate_dir: %s\nsinks:\n  - url: http://127.0.0.1:9/hook\n"
                "    rules: [cuda-out-of-memory]\n" % fresh)
    for argv in (["run", "--config", cfg, "--rules", work.rules, "--check-config"],
                 ["check", "--config", cfg, work.rules]):
        p = tl.run(*argv, timeout=60)
        check(p.returncode == 0, "%s rejected a good config (%d):\n%s%s" % (argv[0], p.returncode, p.stdout, p.stderr))
        check(not os.path.exists(os.path.join(work.path, "fresh")), "%s created the state dir" % argv[0])
    check("2 rules are valid" in tl.run("run", "--config", cfg, "--rules", work.rules, "--check-config").stderr,
          "no success line")
    # A state dir that exists is checked as it is: nothing written in it either.
    os.makedirs(fresh)
    p = tl.run("run", "--config", cfg, "--rules", work.rules, "--check-config", timeout=60)
    check(p.returncode == 0 and os.listdir(fresh) == [], "--check-config wrote into the state dir: %s" %
          os.listdir(fresh))


if __name__ == "__main__":
    tl.main(test)
