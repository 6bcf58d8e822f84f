#!/usr/bin/env bash
# Installs the Debian 12 packages faultline needs, only those that are missing.
#   scripts/install-deps.sh          build dependencies
#   scripts/install-deps.sh --test   build + test dependencies (Prometheus, Alertmanager, Go for the chart renderer, ...)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

lists=("$here/packages-build.txt")
if [[ "${1:-}" == "--test" ]]; then
  lists+=("$here/packages-test.txt")
  for extra in "$top"/deploy/packages*.txt; do [[ -f "$extra" ]] && lists+=("$extra"); done
fi

wanted=()
for list in "${lists[@]}"; do
  while read -r pkg _; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    wanted+=("$pkg")
  done < "$list"
done

missing=()
for pkg in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
