#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang) and runs each one from its seed corpus.
#   scripts/fuzz.sh --short [TARGET...]   CI: 15 s per target (about 2.5 minutes for the 9 targets, build aside)
#   scripts/fuzz.sh --long  [TARGET...]   600 s per target; the figures go to docs/fuzzing.md
#   FUZZ_SECONDS=N scripts/fuzz.sh ...    any other time per target
# A crash, a leak, an UBSan report or a hang of more than 10 s fails the run; the input is kept under
# build-fuzz/artifacts/<target>/ (reproduce: build-fuzz/fuzz/<target> <file>). The corpus grows in
# build-fuzz/corpus/<target>/ and is reused by the next run. Prints one line per target: executions, coverage, crashes.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$top/build-fuzz}
seconds=15
case "${1:-}" in
  --short) seconds=15; shift ;;
  --long) seconds=600; shift ;;
esac
seconds=${FUZZ_SECONDS:-$seconds}
all=(fuzz_rules fuzz_config fuzz_decode fuzz_timestamps fuzz_pipeline fuzz_checkpoint fuzz_state fuzz_spool fuzz_http)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")

cxx=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[[ -n "$cxx" ]] || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh --test installs clang-14)" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" \
  -DFAULTLINE_FUZZ=ON -DFAULTLINE_UNITY=ON -DFAULTLINE_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

# Seeds: the shipped rules, the example configs, the real logs of tests/corpus/real, and fuzz/seeds/<kind>/.
seed_dirs() {
  case "$1" in
    fuzz_rules) echo "$top/rules" ;;
    fuzz_config) echo "$top/examples $top/deploy/config.example.yaml" ;;
    fuzz_decode | fuzz_timestamps | fuzz_pipeline) echo "$top/tests/corpus/real" ;;
    fuzz_checkpoint) echo "$top/fuzz/seeds/checkpoint" ;;
    fuzz_state) echo "$top/fuzz/seeds/state" ;;
    fuzz_spool) echo "$top/fuzz/seeds/spool" ;;
    fuzz_http) echo "$top/fuzz/seeds/http" ;;
  esac
}
max_len() {
  case "$1" in
    fuzz_timestamps | fuzz_http) echo 512 ;;
    fuzz_spool) echo 4096 ;;
    *) echo 16384 ;;
  esac
}

failed=0
printf '%-16s %10s %8s %8s %8s %s\n' target executions cov ft corpus result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t" artifacts="$build/artifacts/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  if [[ -z "$(ls -A "$corpus")" ]]; then
    for s in $(seed_dirs "$t"); do
      if [[ -f "$s" ]]; then cp "$s" "$corpus/"; else
        find "$s" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.log' -o -path '*/fuzz/seeds/*' \) \
          -exec cp -t "$corpus/" {} +
      fi
    done
  fi
  result=ok
  # -rss_limit_mb: the catalog's Hyperscan database and ASan's shadow; -timeout: a hang is a finding.
  if ! (cd "$artifacts" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/fuzz/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=4096 \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1); then
    result="FAILED (see $log)"
    failed=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-16s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$(ls "$corpus" | wc -l)" "$result"
done
exit "$failed"
