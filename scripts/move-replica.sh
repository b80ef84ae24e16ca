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
parse_args -e -m "a number of seconds" 'timeout=' "$@"
[ "${#pos[@]}" -eq 3 ] || usage_error "want GROUP, FROM and TO"
group=${pos[0]} from=${pos[1]} to=${pos[2]}
positive_int GROUP "$group"
positive_int FROM "$from"
positive_int TO "$to"
positive_int --timeout "$timeout"
[ "$from" != "$to" ] || usage_error "FROM and TO are the same node"

echo "move-replica: group $group, node $from -> node $to (via $OPS_API)"

post_accepted "/v1/cluster/groups/$group/replica-moves" "{\"from_node\":$from,\"to_node\":$to}" "the move of group $group's replica from node $from to node $to"
follow_task "$timeout"

case $TASK_STATUS in
succeeded)
  echo "task $TASK_ID succeeded after ${TASK_SECONDS}s: group $group's replica moved from node $from to node $to"
  call_retry GET "/v1/cluster/groups/$group"
  if [ "$OPS_CODE" = 200 ]; then
    print_group
  fi
  ;;
*) die "task $TASK_ID $TASK_STATUS in phase $TASK_PHASE: ${TASK_ERROR:-no error recorded}" ;;
esac
