#!/usr/bin/env bash
# drain-node.sh NODE [--remove] [--timeout SECONDS] — move every replica and
# leader off NODE and follow the drain to its end:
#
#   POST /v1/cluster/nodes/NODE/drain, then GET /v1/cluster/balancer every
#   second, printing the drain's progress (percent, replicas and leaders left,
#   the time left at the pace so far) and every replica move the balancer
#   started for it; with --remove, DELETE /v1/cluster/nodes/NODE once the node
#   holds nothing (the node, started again on its data, then refuses to run).
#
# The balancer carries drains out also while it is paused. Draining a
# draining node resumes following it. Exit 0 when drained (and removed);
# 1 when refused, or --timeout (default 900 s) passes first — the drain goes
# on; 2 usage.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
set -euo pipefail

usage() {
  cat <<'EOF2'
usage: scripts/drain-node.sh NODE [--remove] [--timeout SECONDS]
  --remove   remove the node from the cluster once it is drained
  --timeout  how long to follow the drain (900)
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF2
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

timeout=900 remove=0
parse_args 'timeout= remove' "$@"
[ "${#pos[@]}" -eq 1 ] || usage_error "want NODE"
node=${pos[0]}
positive_int NODE "$node"
positive_int --timeout "$timeout"

echo "drain-node.sh: drain node $node (via $OPS_API)"
post_accepted "/v1/cluster/nodes/$node/drain" "" "draining node $node"
echo "node $node is draining: $(json 'print("%d replicas to move" % d.get("drain_replicas", 0))')"

# The drain's line: "DONE PERCENT LEFT AT_START LEADERS ETA_MS" ("- …" while
# the controller leader has no progress for it yet).
DRAIN_PY='
node = int(sys.argv[2])
for p in d.get("drains") or []:
    if p["node"] == node:
        print(int(p["done"]), round(p["percent"]), p["replicas_left"], p["replicas_at_start"], p["leaders_left"], p["estimated_left_ms"])
        break
else:
    print("- 0 0 0 0 -1")
'
# Balancer decisions about the node after SEQ: "SEQ" then one line each.
DECISIONS_PY='
node, seen = sys.argv[2], int(sys.argv[3])
items = d.get("items") or []
print(len(items))
for x in items[seen:]:
    if x.get("kind", "").startswith("balance") and ("node " + node + " ") in (x.get("detail", "") + " "):
        print("    %s %s: %s" % (x["kind"], x["reason"], x.get("detail", "")))
'
call_retry GET /v1/cluster/decisions
# The count first, whole: `json … | head -n 1` let head close the pipe while
# python still wrote, and under pipefail the SIGPIPE'd python made it
# "67\n0" (CI, 2026-12-04).
seen=0
if [ "$OPS_CODE" = 200 ]; then
  out=$(json "$DECISIONS_PY" "$node" 0)
  seen=$(head -n 1 <<<"$out")
fi
start=$SECONDS deadline=$((SECONDS + timeout)) last=""
while :; do
  get_ok /v1/cluster/balancer
  read -r done pct left total leaders eta <<<"$(json "$DRAIN_PY" "$node")"
  if [ "$done" = 1 ]; then
    echo "[$((SECONDS - start))s] node $node drained: no replicas and no leaders left"
    break
  fi
  line="$pct% ($left of $total replicas left, $leaders leaders)"
  if [ "$line" != "$last" ] && [ "$done" != - ]; then
    if ((eta >= 0)); then
      echo "[$((SECONDS - start))s] node $node: $line, about $(((eta + 999) / 1000))s left"
    else
      echo "[$((SECONDS - start))s] node $node: $line"
    fi
    last=$line
  fi
  call_retry GET /v1/cluster/decisions
  if [ "$OPS_CODE" = 200 ]; then
    out=$(json "$DECISIONS_PY" "$node" "$seen")
    seen=$(head -n 1 <<<"$out")
    sed '1d' <<<"$out"
  fi
  ((SECONDS < deadline)) || die "node $node still holds $left replicas after ${timeout}s; the drain goes on (GET /v1/cluster/balancer)"
  sleep 1
done

if ((remove)); then
  # Removing is idempotent, so a retryable refusal (the node leads the
  # controller and its leadership is being moved first) is asked again.
  call_retry DELETE "/v1/cluster/nodes/$node"
  [ "$OPS_CODE" = 204 ] || die "removing node $node was refused: $(describe)"
  echo "node $node removed: its id is never used again, and started on its old data it refuses to run"
fi
