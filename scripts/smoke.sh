#!/usr/bin/env bash
# smoke.sh [API] — a short walk through the API against a running node
# (default http://127.0.0.1:8080). Exits non-zero on the first surprise.
# SLOTMETA_TOKEN is sent as a bearer token when set; SLOTMETA_CACERT verifies
# an https:// API against the cluster's CA certificate.
set -euo pipefail
api=${1:-http://127.0.0.1:8080}
j=(-H 'Content-Type: application/json')
[ -n "${SLOTMETA_TOKEN:-}" ] && j+=(-H "Authorization: Bearer $SLOTMETA_TOKEN")
[ -n "${SLOTMETA_CACERT:-}" ] && j+=(--cacert "$SLOTMETA_CACERT")
step() { printf '\n== %s\n' "$*"; }
expect() { # expect CODE METHOD PATH [BODY] [HEADER…]; the answer's headers land in /tmp/smoke.$$.h
  local want=$1 method=$2 path=$3 body=${4:-}; shift 4 || shift $#
  local args=(-s -o /tmp/smoke.$$ -D /tmp/smoke.$$.h -w '%{http_code}' -X "$method" "${j[@]}")
  for h in "$@"; do args+=(-H "$h"); done
  [ -n "$body" ] && args+=(-d "$body")
  local got; got=$(curl "${args[@]}" "$api$path")
  cat /tmp/smoke.$$; echo
  [ "$got" = "$want" ] || { echo "smoke: $method $path answered $got, want $want" >&2; exit 1; }
}
trap 'rm -f /tmp/smoke.$$ /tmp/smoke.$$.h' EXIT
# Names of this run's own: a second run must not meet the first one's user
# (deleted) through its idempotency record.
run=$(date +%s%N)
user=smoke-user-$run
step ready;            expect 200 GET /readyz
step "create user";    expect 201 POST /v1/users '{"uid":"'"$user"'","name":"Smoke"}' "Idempotency-Key: smoke-$run"
step "replay";         expect 201 POST /v1/users '{"uid":"'"$user"'","name":"Smoke"}' "Idempotency-Key: smoke-$run"
step "read user";      expect 200 GET "/v1/users/$user"
step "batch users";    expect 200 POST /v1/batch/users/get '{"uids":["'"$user"'","smoke-nobody"]}'
grep -q '"found":true.*"found":false' /tmp/smoke.$$ || { echo "smoke: the batch read of users did not find the user alone" >&2; exit 1; }
step "put key";        expect 200 PUT /v1/kv/smoke.key '{"value":"v1"}'
etag=$(tr -d '\r' </tmp/smoke.$$.h | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
step "CAS";            expect 200 PUT /v1/kv/smoke.key '{"value":"v2"}' "If-Match: $etag"
step "stale CAS";      expect 412 PUT /v1/kv/smoke.key '{"value":"v3"}' "If-Match: $etag"
step "delete user";    expect 204 DELETE "/v1/users/$user"
step "routes";         expect 200 POST /v1/cluster/routes/resolve '{"keys":["'"$user"'","smoke.key"]}'
step "batch write";    expect 200 POST /v1/batch/kv/write '{"ops":[{"op":"put","key":"smoke.a","value":"1"},{"op":"put","key":"smoke.b","value":"2"}]}'
grep -q '"ok":true.*"ok":true' /tmp/smoke.$$ || { echo "smoke: the batch write did not apply both" >&2; exit 1; }
step "batch read";     expect 200 POST /v1/batch/kv/get '{"keys":["smoke.a","smoke.b","smoke.key"]}'
[ "$(grep -o '"found":true' /tmp/smoke.$$ | wc -l)" = 3 ] || { echo "smoke: the batch read did not find all three" >&2; exit 1; }
echo; echo "smoke: ok"
