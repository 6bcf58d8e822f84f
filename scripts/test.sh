#!/usr/bin/env bash
# Builds and runs every test: under ASan+UBSan the unit tests and the integration layer against the instrumented
# binary, a short run of every fuzz target (clang), then the whole suite on the release build (unit, rules,
# integration, e2e, deploy, bench smoke, reliability).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
"$top/scripts/install-deps.sh" --test
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

echo "== sanitizer build (ASan + UBSan, unity): unit tests and the integration layer (docs/fuzzing.md)"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON -DFAULTLINE_UNITY=ON \
  -DFAULTLINE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$top/build-asan" -j"$jobs"
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L 'unit|sanitizer' --output-on-failure -j"$jobs")

echo "== fuzz: every libFuzzer target, 10 s each from its seeds (docs/fuzzing.md)"
FUZZ_SECONDS=10 FUZZ_JOBS="$jobs" "$top/scripts/fuzz.sh"

echo "== release build: every test"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$top/build" -j"$jobs"
cd "$top/build" && ctest --output-on-failure -j"$jobs"
