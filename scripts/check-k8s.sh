#!/usr/bin/env bash
# The Kubernetes manifests (deploy/k8s, docs/kubernetes.md), offline: no cluster runs here.
# Renders the kustomization with `kubectl kustomize`, validates every object against the
# Kubernetes 1.32 schemas with `kubernetes-validate --strict` (PyPI, pinned, installed into
# a cache by scripts/pydeps.sh when missing; it carries the schemas, so nothing is fetched), checks
# that the validator refuses a broken object, then checks what no schema says
# (scripts/check-k8s.py): hardening and requests on every container, the swarm's targets are
# the Services, every E03_* key is a parameter of the lab. A few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v kubectl >/dev/null 2>&1; then
    echo "SKIPPED: check-k8s: kubectl is not installed (it renders deploy/k8s: kubectl kustomize)"
    exit 0
fi
pydeps=$(scripts/pydeps.sh 'kubernetes-validate==1.37.0')
work=$(mktemp -d /tmp/e03-k8s.XXXXXX)
trap 'rm -rf "$work"' EXIT
kubectl kustomize deploy/k8s > "$work/rendered.yaml"
validate() {
    PYTHONPATH="$pydeps" python3 -m kubernetes_validate --strict --kubernetes-version 1.32.0 "$@"
}
validate "$work/rendered.yaml"
# The validator is not vacuous: a misspelled field is refused.
sed 's/readOnlyRootFilesystem:/readOnlyRootFileSystem:/' "$work/rendered.yaml" > "$work/broken.yaml"
if validate --quiet "$work/broken.yaml" >/dev/null 2>&1; then
    echo "check-k8s: kubernetes-validate accepted a misspelled field" >&2
    exit 1
fi
PYTHONPATH="$pydeps" python3 scripts/check-k8s.py "$work/rendered.yaml" docs/parameters.md
