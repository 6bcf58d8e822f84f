#!/bin/sh
# Prints the Debian packages that provide the shared libraries BINARY loads, one a line: the
# runtime stage of the Dockerfile installs exactly these, so it never drifts from what the
# build stage linked. Run on the machine (or stage) that built BINARY.
#   runtime-packages.sh BINARY
set -eu
bin=${1:?usage: runtime-packages.sh BINARY}
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
[ -n "$libs" ] || { echo "runtime-packages.sh: ldd found no libraries in $bin" >&2; exit 1; }
pkgs=""
for lib in $libs; do
  real=$(readlink -f "$lib")
  found=""
  # Debian 12 is merged-/usr: dpkg may know a library under /lib or /usr/lib.
  for p in "$lib" "$real" "/usr$lib" "${lib#/usr}" "/usr$real" "${real#/usr}"; do
    if out=$(dpkg -S "$p" 2>/dev/null); then
      found=$(printf '%s\n' "$out" | head -n1 | sed 's/: .*//; s/:[a-z0-9]*//g; s/, /\n/g')
      break
    fi
  done
  [ -n "$found" ] || { echo "runtime-packages.sh: no Debian package owns $lib" >&2; exit 1; }
  pkgs="$pkgs
$found"
done
printf '%s\n' "$pkgs" | sed '/^$/d' | sort -u
