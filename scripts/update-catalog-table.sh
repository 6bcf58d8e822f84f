#!/usr/bin/env bash
# Regenerates the catalog table in rules/README.md from the rules themselves.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${FAULTLINE_BIN:-$top/build/faultline}
table=$("$bin" rules list --markdown "$top/rules")
python3 - "$top/rules/README.md" "$table" <<'PY'
import sys
path, table = sys.argv[1], sys.argv[2] + "\n"
text = open(path, encoding="utf-8").read()
begin, end = "<!-- catalog:begin -->\n", "<!-- catalog:end -->"
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
open(path, "w", encoding="utf-8").write(head + begin + table + end + tail)
PY
