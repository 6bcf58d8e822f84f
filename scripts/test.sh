#!/usr/bin/env bash
# Builds and runs every test (what .ci/run calls), in three trees:
#   1. build-asan  the whole binary and the unit tests under ASan + UBSan (unity build, -O1 -g1): the unit tests and
#                  the integration tests against the instrumented binary (tests/CMakeLists.txt names the two timing
#                  tests left out, and why); any sanitizer report of any daemon fails the run (sanitizer_reports)
#   2. build-fuzz  the libFuzzer targets (clang), 15 s each from their seed corpora (scripts/fuzz.sh --short)
#   3. build       the release build: every test (unit, rules, integration, e2e, deploy)
#   FAULTLINE_TSAN=1 adds a ThreadSanitizer tree (build-tsan) for the daemon's threaded unit tests.
# Figures, measured 2026-12-01 on the shared 2-core machine (load average 11-14), empty cache (CCACHE_DISABLE=1);
# CPU = user + sys, so an idle 2-core CI machine takes about CPU / 2 of wall time:
#   build-asan, the binary (gcc 12, unity batches of 8, -O1 -g1): 557 CPU-s (35 min wall under that load, ~4.6 min
#     idle). Before (non-unity, RelWithDebInfo): not finished in 60 min under the same load (24 of 29 objects).
#     The unit tests of that tree: not measured yet.
#   build-asan, integration tests against it, -j1: config_errors 6 s, docker_json 6 s, kmsg 9 s, long_line 7 s,
#     kill9_restart 42 s, scan 439 s (the largest: it scans the whole real corpus several times).
#   build-fuzz (clang 14, 46 sources in unity batches + 9 targets): ~250 CPU-s (~2 min idle).
#   fuzz.sh --short: 9 targets x 15 s = ~2.5 min.
#   build-tsan: not measured; left out of the default run until it is (FAULTLINE_TSAN=1 runs it).
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
