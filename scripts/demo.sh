#!/usr/bin/env bash
# Quick start: install what is missing, build, then run the daemon on a demo serving log that a replayer appends to,
# and show the incidents arriving. The bundled logs end in the two seed failures (FlashInfer FMHA unsupported
# architecture on an RTX PRO 6000; FlashInfer CUTLASS fused-MoE TMA grouped GEMM on a DGX Spark).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$top/scripts/install-deps.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$top/build" -j"$(nproc)" --target faultline
bin="$top/build/faultline"

work=$(mktemp -d)
cleanup() {
  [[ -n "${daemon:-}" ]] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/logs" "$work/state"

echo
echo "== faultline run: following $work/logs/*.log (incidents as JSON lines below)"
"$bin" run --source "$work/logs/*.log" --state-dir "$work/state" --listen off --start-at beginning \
  --output "$work/incidents.jsonl" --log-level warn &
daemon=$!
sleep 1
for log in "$top"/examples/demo/*.log; do
  name=$(basename "$log")
  echo "   replaying $name at 40 lines/s"
  python3 "$top/scripts/replay.py" --rate 40 "$log" "$work/logs/$name"
done

# Wait for both seed incidents (held ones are released after the rule's tolerance).
for _ in $(seq 1 100); do
  n=$(grep -c '"status":"firing"' "$work/incidents.jsonl" 2>/dev/null || true)
  if grep -q flashinfer-fmha-unsupported-arch "$work/incidents.jsonl" 2>/dev/null &&
     grep -q flashinfer-moe-tma-grouped-gemm "$work/incidents.jsonl" 2>/dev/null; then break; fi
  sleep 0.2
done
python3 - "$work/incidents.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    inc = json.loads(line)
    cause = f" (explained by {inc['caused_by']['rule']})" if inc.get("caused_by") else ""
    print(f"-> [{inc['severity'].upper()}] {inc['title']}{cause} ({inc['status']})")
    print(f"   rule {inc['rule']}, incident {inc['id']} rev {inc['revision']}, {inc['stream']}, "
          f"fields {inc['fields']}")
PY
kill -TERM "$daemon"
wait "$daemon"
daemon=""

echo
echo "== the same logs, one pass: faultline scan examples/demo/*.log"
status=0
"$bin" scan "$top"/examples/demo/*.log || status=$?
# 1 means incidents were found: that is what the demo shows.
[[ $status -eq 0 || $status -eq 1 ]]
