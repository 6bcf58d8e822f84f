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
for log in "$top"/examples/demo/vllm-dgx-spark-mistral-small-4.log "$top"/examples/demo/trtllm-serve-rtx-pro-6000.log; do
  name=$(basename "$log")
  echo "   replaying $name at 40 lines/s"
  python3 "$top/scripts/replay.py" --rate 40 "$log" "$work/logs/$name"
done

# Wait until both seed incidents are out and nothing new has arrived for 12 s (held incidents — late evidence,
# cascades waiting for a root cause — are released when the log has been silent for their hold time).
last=-1; still=0
for _ in $(seq 1 300); do
  n=$(wc -l < "$work/incidents.jsonl" 2>/dev/null || echo 0)
  if [[ $n -eq $last ]]; then still=$((still + 1)); else still=0; last=$n; fi
  if grep -q flashinfer-fmha-unsupported-arch "$work/incidents.jsonl" 2>/dev/null &&
     grep -q flashinfer-moe-tma-grouped-gemm "$work/incidents.jsonl" 2>/dev/null && [[ $still -ge 60 ]]; then break; fi
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
