#!/usr/bin/env bash
# Ordered rollout: configuration, then the migration Job to completion, then the apps.
#   IMAGE=registry.example.com/member-ai-platform:1.2.3 deploy/k8s/apply.sh
set -euo pipefail
cd "$(dirname "$0")"
NS=member-ai-platform
IMAGE="${IMAGE:-}"

set_image() { # stdin -> stdout with every member-ai-platform image replaced by $IMAGE
  if [ -n "$IMAGE" ]; then sed -E "s#image: member-ai-platform:[^ ]+#image: ${IMAGE}#"; else cat; fi
}

kubectl apply -f namespace.yaml
kubectl apply -f configmap.yaml
if ! kubectl -n "$NS" get secret platform-secrets >/dev/null 2>&1; then
  grep -q CHANGE-ME secret.yaml && { echo "secret.yaml still has CHANGE-ME placeholders: create the Secrets first (see docs/operations/deploy.md)" >&2; exit 1; }
  kubectl apply -f secret.yaml
fi

# Jobs are immutable: replace the previous run.
kubectl -n "$NS" delete job migrate --ignore-not-found --wait=true
set_image < migrate-job.yaml | kubectl apply -f -
if ! kubectl -n "$NS" wait --for=condition=complete job/migrate --timeout=900s; then
  kubectl -n "$NS" logs job/migrate --tail=100 || true
  echo "migration failed: Deployments left unchanged" >&2
  exit 1
fi

for app in membership ai-gateway; do
  set_image < "$app.yaml" | kubectl apply -f -
done
kubectl apply -f ingress.yaml
for app in membership ai-gateway; do
  kubectl -n "$NS" rollout status "deployment/$app" --timeout=600s
done
