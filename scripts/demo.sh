#!/usr/bin/env bash
# Quick start: install what is missing, build, and run faultline on the bundled demo logs (both seed failures).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build" -j"$(nproc)" --target faultline
echo
echo "== faultline scan examples/demo/*.log"
status=0
"$top/build/faultline" scan "$top"/examples/demo/*.log || status=$?
# 1 means incidents were found: that is what the demo shows.
[[ $status -eq 0 || $status -eq 1 ]]
