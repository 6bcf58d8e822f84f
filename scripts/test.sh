#!/usr/bin/env bash
# Builds and runs every test: unit tests under ASan+UBSan, then the whole suite (unit, rules, integration, e2e).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
"$top/scripts/install-deps.sh" --test

echo "== sanitizer build (ASan + UBSan): unit tests"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON -DFAULTLINE_BUILD_BENCH=OFF >/dev/null
cmake --build "$top/build-asan" -j"$jobs"
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -L unit --output-on-failure -j"$jobs")

echo "== release build: every test"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build" -j"$jobs"
cd "$top/build" && ctest --output-on-failure -j"$jobs"
