#!/usr/bin/env bash
# Validates the manifests offline: each against the Kubernetes API schemas
# that the kubernetes-validate package ships (strict: unknown fields are
# errors), for the oldest and newest Kubernetes versions it knows; a manifest
# with a mistake must fail; the ConfigMap's configuration passes
# `bully-agent check` for each pod's id; the job is a valid shell script.
# Installs kubernetes-validate from PyPI if missing; no other network.
# Run from anywhere: bash deploy/kubernetes/validate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if ! command -v kubernetes-validate >/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
fi
manifests=(secret.yaml configmap.yaml service.yaml statefulset.yaml poddisruptionbudget.yaml)
cd "$here"
versions=$(python3 -c 'import kubernetes_validate.utils as u; v=sorted(u.all_versions(), key=lambda s: [int(x) for x in s.split(".")]); print(v[0], v[-1])' 2>/dev/null || echo "1.37.0")
for version in $versions; do
  kubernetes-validate --strict --quiet -k "$version" "${manifests[@]}"
  echo "kubernetes-validate: ${#manifests[@]} manifests valid against Kubernetes $version"
done
# The validator does refuse a mistake.
broken=$(mktemp --suffix=.yaml)
trap 'rm -f "$broken"' EXIT
sed 's/serviceName: bully-agent/serviceNme: bully-agent/' statefulset.yaml > "$broken"
if kubernetes-validate --strict --quiet "$broken" >/dev/null 2>&1; then
  echo "FAILED: a misspelt field passed the validation" >&2
  exit 1
fi

agent=${BULLY_AGENT:-}
if [ -z "$agent" ] || [ ! -x "$agent" ]; then
  (cd "$root" && cargo build -q -p bully-agent)
  agent=$root/target/debug/bully-agent
fi
work=$(mktemp -d)
trap 'rm -f "$broken"; rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import sys, yaml
work = sys.argv[1]
data = yaml.safe_load(open("configmap.yaml"))["data"]
toml = data["cluster.toml"].replace("/var/lib/bully-agent", work + "/state") \
    .replace("/etc/bully-agent-keys/", work + "/")
open(work + "/cluster.toml", "w").write(toml)
open(work + "/job.sh", "w").write(data["job.sh"])
PY
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$work/key-1"
for id in 1 2 3; do
  "$agent" check --config "$work/cluster.toml" --id "$id"
done
sh -n "$work/job.sh"
echo "the ConfigMap's configuration and job are valid for members 1, 2 and 3"
