#!/bin/sh
# Build helmrender fully offline from Debian's Go packages (see deploy/packages.txt):
# GOPATH mode over /usr/share/gocode/src, plus an overlay GOPATH that makes the
# major-version import paths of v2+ modules (github.com/Masterminds/sprig/v3, ...)
# resolve to Debian's directories, which are installed without the /vN suffix.
#
#   build.sh OUT_DIR      -> OUT_DIR/helmrender
set -eu
out=${1:?usage: build.sh OUT_DIR}
src=$(cd "$(dirname "$0")" && pwd)
gocode=${GOCODE:-/usr/share/gocode/src}
command -v go >/dev/null || { echo "build.sh: go not found (apt-get install golang-go)" >&2; exit 1; }
[ -d "$gocode/github.com/Masterminds/sprig" ] ||
  { echo "build.sh: sprig not found in $gocode (apt-get install golang-github-masterminds-sprig-dev)" >&2; exit 1; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
overlay="$out/gopath"
rm -rf "$overlay"
mkdir -p "$overlay/src/faultline.deploy"
ln -s "$src" "$overlay/src/faultline.deploy/helmrender"
# Every go.mod under gocode whose module path ends in /vN and whose directory is not
# already at that path gets a symlink <overlay>/src/<module path> -> <dir>.
find "$gocode" -name go.mod -type f | while read -r mod; do
  dir=$(dirname "$mod")
  path=$(sed -n 's/^module[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$mod" | head -n1 | tr -d '"')
  case "$path" in */v[0-9]*) ;; *) continue ;; esac
  [ -e "$gocode/$path" ] && continue
  mkdir -p "$overlay/src/$(dirname "$path")"
  [ -e "$overlay/src/$path" ] || ln -s "$dir" "$overlay/src/$path"
done
cd "$overlay/src/faultline.deploy/helmrender"
GO111MODULE=off GOPATH="$overlay:$(dirname "$gocode")" GOCACHE="$out/gocache" GOFLAGS= \
  GOPROXY=off CGO_ENABLED=0 go build -o "$out/helmrender" .
