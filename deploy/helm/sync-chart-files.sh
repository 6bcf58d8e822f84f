#!/bin/sh
# Copy the files the chart keeps from elsewhere in the repository into the chart, so the chart
# directory is complete by itself (helm package, helm install from a git path, OCI push).
#   deploy/prometheus/alerts.yaml -> deploy/helm/faultline/files/alerts.yaml  (PrometheusRule)
# tests/deploy/test_helm.py fails when the copy differs from its source.
# (files/rules is a symlink to rules/: helm follows it, and `helm package` stores the files.)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../prometheus/alerts.yaml"
dst="$here/faultline/files/alerts.yaml"
if [ ! -f "$src" ]; then
  echo "sync-chart-files.sh: $src does not exist" >&2
  exit 1
fi
cp "$src" "$dst"
echo "copied $src -> $dst"
