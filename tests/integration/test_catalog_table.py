#!/usr/bin/env python3
"""The catalog table in rules/README.md is what `faultline rules list --markdown` generates
(regenerate it with scripts/update-catalog-table.sh)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import faultline_testlib as tl  # noqa: E402

SRC = tl.SOURCE_DIR
readme = open(os.path.join(SRC, "rules", "README.md"), encoding="utf-8").read()
begin, end = "<!-- catalog:begin -->\n", "<!-- catalog:end -->"
if begin not in readme or end not in readme:
    print("FAIL rules/README.md has no catalog markers")
    sys.exit(1)
current = readme.split(begin, 1)[1].split(end, 1)[0]
p = tl.run("rules", "list", "--markdown", os.path.join(SRC, "rules"))
if p.returncode != 0:
    print("FAIL faultline rules list:", p.stderr)
    sys.exit(1)
if current != p.stdout:
    print("FAIL the catalog table in rules/README.md is out of date; run scripts/update-catalog-table.sh")
    sys.exit(1)
rows = [l for l in p.stdout.splitlines() if l.startswith("| `")]
print(f"ok   catalog table up to date ({len(rows)} rules)")
