#!/usr/bin/env bash
# move-replica.sh GROUP FROM TO [--timeout SECONDS]
#
# Move slot group GROUP's replica from node FROM to node TO and follow the
# task to its end:
#   POST /v1/cluster/groups/GROUP/replica-moves {"from_node":FROM,"to_node":TO}
#   starts the task (or resumes a failed one); the controller leader carries it
#   out: add_learner -> catch_up -> promote -> remove_old -> commit -> done.
#   GET /v1/cluster/tasks/{id} is then polled; each phase change is printed
#   with the task's latest history note (the Raft membership it observed).
# Exit 0 when the task succeeds; 1 when the move is refused, the task fails
# or is cancelled (its error is printed), or --timeout (default 300 s) passes
# first — the task then goes on; POST /v1/cluster/tasks/{id}/cancel stops it.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
# Exit status: 0 moved, 1 refused, failed or timed out, 2 usage.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/move-replica.sh GROUP FROM TO [--timeout SECONDS]
  GROUP              slot group id
  FROM               the node whose replica moves (a desired peer)
  TO                 the node that receives it (active, not yet a peer)
  --timeout SECONDS  how long to follow the task (300)
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

timeout=300
pos=()
while [ $# -gt 0 ]; do
  case $1 in
  --timeout)
    [ $# -ge 2 ] || usage_error "--timeout needs a number of seconds"
    timeout=$2
    shift
    ;;
  --timeout=*) timeout=${1#*=} ;;
  -h | --help) usage && exit 0 ;;
  -*) usage_error "unknown option $1" ;;
  *) pos+=("$1") ;;
  esac
  shift
done
[ "${#pos[@]}" -eq 3 ] || usage_error "want GROUP, FROM and TO"
group=${pos[0]} from=${pos[1]} to=${pos[2]}
positive_int GROUP "$group"
positive_int FROM "$from"
positive_int TO "$to"
positive_int --timeout "$timeout"
[ "$from" != "$to" ] || usage_error "FROM and TO are the same node"

echo "move-replica: group $group, node $from -> node $to (via $OPS_API)"

# The task line: "ID PHASE STATUS ATTEMPT HISTORY_LENGTH", then the newest
# history records after the first SEEN of them, then the error, if any.
TASK_PY='
seen = int(sys.argv[2])
h = d.get("history") or []
print(d["id"], d["phase"], d["status"], d.get("attempt", 0), len(h))
for r in h[seen:]:
    print("    %s: %s (voter replicas %s, learner replicas %s)" % (r["phase"], r.get("note") or "-",
          ",".join(map(str, r.get("voters") or [])) or "none", ",".join(map(str, r.get("learners") or [])) or "none"))
if d.get("error"):
    print("ERROR " + d["error"].replace("\n", " "))
'

start=$SECONDS
call POST "/v1/cluster/groups/$group/replica-moves" "{\"from_node\":$from,\"to_node\":$to}"
[ "$OPS_CODE" = 202 ] || die "the move of group $group's replica from node $from to node $to was refused: $(describe)"
info=$(json "$TASK_PY" 0)
read -r task phase status attempt seen <<<"$(head -n 1 <<<"$info")"
if ((attempt > 1)); then
  echo "task $task resumed (attempt $attempt): phase $phase, $status"
else
  echo "task $task started: phase $phase, $status"
fi
sed '1d; /^ERROR /d' <<<"$info"

# Follow it. A task is kept in the replicated controller state, which the
# answering node may apply a moment after the leader: a 404 right after the
# POST is waited out for a few seconds.
deadline=$((SECONDS + timeout)) grace=$((SECONDS + 5)) error=""
while [ "$status" = running ] || [ "$status" = cancelling ]; do
  if ((SECONDS >= deadline)); then
    die "task $task is still $status in phase $phase after ${timeout}s; it goes on (GET /v1/cluster/tasks/$task; POST /v1/cluster/tasks/$task/cancel stops it)"
  fi
  sleep 0.5
  call_retry GET "/v1/cluster/tasks/$task"
  if [ "$OPS_CODE" = 404 ] && ((SECONDS < grace)); then
    continue
  fi
  [ "$OPS_CODE" = 200 ] || die "following task $task failed: $(describe)"
  info=$(json "$TASK_PY" "$seen")
  read -r _ new_phase new_status attempt new_seen <<<"$(head -n 1 <<<"$info")"
  error=$(sed -n 's/^ERROR //p' <<<"$info")
  if [ "$new_phase" != "$phase" ]; then
    echo "[$((SECONDS - start))s] task $task: phase $phase -> $new_phase ($new_status)"
  elif [ "$new_status" != "$status" ]; then
    echo "[$((SECONDS - start))s] task $task: phase $phase, $status -> $new_status"
  fi
  sed '1d; /^ERROR /d' <<<"$info"
  phase=$new_phase status=$new_status seen=$new_seen
done

case $status in
succeeded)
  echo "task $task succeeded after $((SECONDS - start))s: group $group's replica moved from node $from to node $to"
  call_retry GET "/v1/cluster/groups/$group"
  if [ "$OPS_CODE" = 200 ]; then
    json 'print("group %d now: desired peers %s, voters %s, learners %s, leader %s (config epoch %s; observed %sms ago)" % (
    d["id"], ",".join(str(p["node"]) for p in d.get("desired_peers") or []) or "none",
    ",".join(map(str, d.get("voters") or [])) or "none", ",".join(map(str, d.get("learners") or [])) or "none",
    d["leader"] or "none", d["config_epoch"], d["observation_age_ms"]))'
  fi
  ;;
*) die "task $task $status in phase $phase: ${error:-no error recorded}" ;;
esac
