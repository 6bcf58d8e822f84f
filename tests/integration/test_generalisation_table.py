#!/usr/bin/env python3
"""The per-kind recall table in rules/README.md is what scripts/generalisation.py computes from the real corpus with
this binary (regenerate it with `scripts/generalisation.py --write`), and no negative control raises anything."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

script = os.path.join(tl.SOURCE_DIR, "scripts", "generalisation.py")
env = dict(os.environ, FAULTLINE_BIN=tl.binary(), FAULTLINE_SOURCE_DIR=tl.SOURCE_DIR)
tally = tl.Tally()
p = subprocess.run([sys.executable, script, "--check", "--files"], capture_output=True, text=True, env=env, timeout=600)
out = p.stdout.splitlines()
tally.check(p.returncode == 0, "generalisation table in rules/README.md is current: " + (out[-1] if out else p.stderr))
negatives = [l for l in out if " NONE " in l]
tally.check(bool(negatives), f"the corpus has negative controls ({len(negatives)})")
for line in negatives:
    tally.check(line.startswith("ok "), "negative control raises nothing: " + line)
tally.finish()
