#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang) and runs each one from its seed corpus.
#   scripts/fuzz.sh --short [TARGET...]   CI: 15 s per target (about 2.5 minutes for the 10 targets, build aside)
#   scripts/fuzz.sh --long  [TARGET...]   600 s per target; the figures go to docs/fuzzing.md
#   FUZZ_SECONDS=N scripts/fuzz.sh ...    any other time per target
#   FUZZ_JOBS=N                           run N targets at once (default 1; each target uses one core)
#   FUZZ_NO_BUILD=1                       use the targets already in the build dir (built elsewhere)
#   FUZZ_RUNNER="cmd args"                a prefix for each target's command (e.g. a dynamic loader)
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
all=(fuzz_rules fuzz_captures fuzz_config fuzz_decode fuzz_timestamps fuzz_pipeline fuzz_checkpoint fuzz_state fuzz_spool fuzz_http)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")

cxx=${FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
[[ -n "$cxx" || -n "${FUZZ_NO_BUILD:-}" ]] || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh --test installs clang-14)" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ -z "${FUZZ_NO_BUILD:-}" ]]; then
  cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" \
    -DFAULTLINE_FUZZ=ON -DFAULTLINE_UNITY=ON -DFAULTLINE_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi
read -r -a runner <<<"${FUZZ_RUNNER:-}"
jobs=${FUZZ_JOBS:-1}

# Seeds: the shipped rules, the example configs, the real logs of tests/corpus/real, and fuzz/seeds/<kind>/.
seed_dirs() {
  case "$1" in
    fuzz_rules) echo "$top/rules" ;;
    fuzz_config) echo "$top/examples $top/deploy/config.example.yaml" ;;
    fuzz_decode) echo "$top/tests/corpus/real $top/fuzz/seeds/decode" ;;
    fuzz_timestamps | fuzz_pipeline) echo "$top/tests/corpus/real" ;;
    fuzz_captures) echo "$top/fuzz/seeds/captures" ;;
    fuzz_checkpoint) echo "$top/fuzz/seeds/checkpoint" ;;
    fuzz_state) echo "$top/fuzz/seeds/state" ;;
    fuzz_spool) echo "$top/fuzz/seeds/spool" ;;
    fuzz_http) echo "$top/fuzz/seeds/http" ;;
  esac
}
max_len() {
  case "$1" in
    fuzz_timestamps | fuzz_http) echo 512 ;;
    fuzz_spool | fuzz_captures) echo 4096 ;;
    *) echo 16384 ;;
  esac
}

run_target() {
  local t=$1
  local corpus="$build/corpus/$t" artifacts="$build/artifacts/$t" log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  if [[ -z "$(ls -A "$corpus")" ]]; then
    for s in $(seed_dirs "$t"); do
      if [[ -f "$s" ]]; then cp "$s" "$corpus/"; else
        find "$s" -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.log' -o -path '*/fuzz/seeds/*' \) \
          -exec cp -t "$corpus/" {} +
      fi
    done
  fi
  local result=ok
  # -rss_limit_mb: the catalog's Hyperscan database and ASan's shadow; -timeout: a hang is a finding.
  if ! (cd "$artifacts" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "${runner[@]}" "$build/fuzz/$t" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1); then
    result="FAILED (see $log)"
  fi
  local execs last cov ft
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-16s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$(ls "$corpus" | wc -l)" "$result" \
    >"$build/logs/$t.result"
}

mkdir -p "$build/logs"
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.result"
  while (( $(jobs -rp | wc -l) >= jobs )); do wait -n || true; done
  run_target "$t" &
done
wait
failed=0
printf '%-16s %10s %8s %8s %8s %s\n' target executions cov ft corpus result
for t in "${targets[@]}"; do
  if [[ -f "$build/logs/$t.result" ]]; then cat "$build/logs/$t.result"; else echo "$t: no result"; failed=1; fi
  grep -q "FAILED" "$build/logs/$t.result" 2>/dev/null && failed=1
done
# What failed, where a CI log shows it: the end of each failing target's log (the finding and its input).
for t in "${targets[@]}"; do
  if grep -q "FAILED" "$build/logs/$t.result" 2>/dev/null; then
    echo "---- $t (end of $build/logs/$t.log)"
    tail -40 "$build/logs/$t.log"
  fi
done
exit "$failed"
