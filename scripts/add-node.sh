#!/usr/bin/env bash
# add-node.sh NODE [--timeout SECONDS] — follow a new node into the cluster
# until the balancer has settled around it:
#
#   start the node with --join first (locally: scripts/cluster.sh join NODE);
#   this waits until it is registered and active (GET /v1/cluster/nodes), then
#   follows the balancer every second, printing each action it starts (from
#   the decision log) and the node's replicas and leaders, until its plan
#   (GET /v1/cluster/balancer/plan) is empty and no task runs.
#
# Exit 0 when the cluster is balanced with the node in it; 1 when the node
# does not become active, the balancer is paused or turned off (nothing would
# move to the node: PUT /v1/cluster/balancer {"paused":false}), or --timeout
# (default 900 s) passes first — the balancer goes on; 2 usage.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
set -euo pipefail

usage() {
  cat <<'EOF2'
usage: scripts/add-node.sh NODE [--timeout SECONDS]
  --timeout  how long to follow the balancer (900)
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF2
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

timeout=900
parse_args 'timeout=' "$@"
[ "${#pos[@]}" -eq 1 ] || usage_error "want NODE"
node=${pos[0]}
positive_int NODE "$node"
positive_int --timeout "$timeout"
start=$SECONDS deadline=$((SECONDS + timeout))

echo "add-node.sh: node $node joins (via $OPS_API)"
while :; do
  get_ok /v1/cluster/nodes
  state=$(json 'n = [x for x in d["items"] if x["id"] == int(sys.argv[2])]; print(n[0].get("state", "?") if n else "absent")' "$node")
  [ "$state" = active ] && break
  case $state in removed | draining) die "node $node is $state" ;; esac
  ((SECONDS < deadline)) || die "node $node is $state after ${timeout}s (start it with --join)"
  sleep 1
done
echo "[$((SECONDS - start))s] node $node is active"

get_ok /v1/cluster/balancer
read -r enabled paused <<<"$(json 'print(int(d["enabled"]), int(d["paused"]))')"
((enabled)) || die "the balancer is turned off on the controller leader (--balancer=false): nothing moves to node $node by itself"
((paused == 0)) || die "the balancer is paused: nothing moves to node $node (resume it: PUT /v1/cluster/balancer {\"paused\":false})"

NODE_PY='
node = int(sys.argv[2])
for l in d.get("load") or []:
    if l["node"] == node:
        print(l["replicas"], l["leaders"])
        break
else:
    print(0, 0)
'
PLAN_PY='
a = d.get("actions") or []
print(len(a), (d.get("held") or "-").replace(" ", "_"))
for x in a:
    print("    next: %s %s: %s" % (x["kind"], x["reason"], x["detail"]))
'
last="" calm=0
while :; do
  get_ok /v1/cluster/balancer
  read -r replicas leaders <<<"$(json "$NODE_PY" "$node")"
  if [ "$replicas $leaders" != "$last" ]; then
    echo "[$((SECONDS - start))s] node $node holds $replicas replicas and leads $leaders groups"
    last="$replicas $leaders"
  fi
  get_ok /v1/cluster/tasks
  running=$(json 'print(sum(1 for t in d["items"] if t["status"] in ("running", "cancelling")))')
  get_ok /v1/cluster/balancer/plan
  plan=$(json "$PLAN_PY")
  read -r actions held <<<"$(head -n 1 <<<"$plan")"
  if [ "$actions" = 0 ] && [ "$running" = 0 ] && [ "$held" = - ]; then
    # Twice in a row: the preferred-leader reconciler moves leaders a round
    # after the balancer asked.
    calm=$((calm + 1))
    if ((calm >= 2)); then
      echo "[$((SECONDS - start))s] balanced: node $node holds $replicas replicas and leads $leaders groups; nothing left to do"
      exit 0
    fi
  else
    calm=0
    if [ "$running $plan" != "${shown-}" ]; then
      [ "$running" = 0 ] || echo "[$((SECONDS - start))s] $running tasks running"
      [ "$held" = - ] || echo "[$((SECONDS - start))s] the balancer waits: $held"
      sed '1d' <<<"$plan"
      shown="$running $plan"
    fi
  fi
  ((SECONDS < deadline)) || die "the balancer still has work after ${timeout}s; it goes on (GET /v1/cluster/balancer/plan)"
  sleep 1
done
