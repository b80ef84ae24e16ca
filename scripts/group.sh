#!/usr/bin/env bash
# group.sh COMMAND … — slot groups at runtime, each change followed to its end:
#
#   group.sh create [--peers 1,2,3]                    POST /v1/cluster/groups
#   group.sh split GROUP [--slots 5,6] [--peers 1,2,3] POST /v1/cluster/groups/GROUP/split
#   group.sh merge GROUP INTO                          POST /v1/cluster/groups/GROUP/merge
#   group.sh retire GROUP                              DELETE /v1/cluster/groups/GROUP
#
# create starts a new, empty group (on the named nodes, or those the
# controller chooses) and waits until it runs; split creates one and moves
# hash slots of GROUP into it (default: the upper half), slot after slot;
# merge moves every slot of GROUP into INTO and retires GROUP; retire removes
# an empty group. split and merge move hash slots live (refused on nodes
# started with --enable-hash-slot-migration=false). The task (GET /v1/cluster/tasks/{id}) is
# polled; each phase change is printed with the notes its history gained.
# Exit 0 when it succeeds; 1 when it is refused, fails, is cancelled, or
# --timeout (default 600 s) passes first — the task then goes on;
# POST /v1/cluster/tasks/{id}/cancel stops it before its current slot's switch.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
# Exit status: 0 done, 1 refused, failed or timed out, 2 usage.
set -euo pipefail

usage() {
  cat <<'EOF2'
usage: scripts/group.sh create [--peers N,N,N] [--timeout SECONDS]
       scripts/group.sh split GROUP [--slots S,S,…] [--peers N,N,N] [--timeout SECONDS]
       scripts/group.sh merge GROUP INTO [--timeout SECONDS]
       scripts/group.sh retire GROUP
  --peers    the new group's nodes (as many as the replication factor)
  --slots    the hash slots (0..255) a split moves (default: the upper half of GROUP's)
  --timeout  how long to follow the task (600)
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF2
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

# id_list NAME VALUE: a comma-separated list of whole numbers, as JSON.
id_list() {
  [[ $2 =~ ^[0-9]{1,10}(,[0-9]{1,10})*$ ]] || usage_error "$1 wants numbers separated by commas, got '$2'"
  printf '[%s]' "$2"
}

# --peers and --slots are read as JSON lists (parse_args).
value_peers() { id_list --peers "$1"; }
value_slots() { id_list --slots "$1"; }

[ $# -ge 1 ] || usage_error "want a command: create, split, merge or retire"
cmd=$1
shift
timeout=600 peers="" slots=""
parse_args 'timeout= peers= slots=' "$@"
positive_int --timeout "$timeout"

# body: the JSON object of the given members that are set.
body() {
  local out="" kv
  for kv in "$@"; do
    [ -n "${kv#*=}" ] || continue
    out+="${out:+,}\"${kv%%=*}\":${kv#*=}"
  done
  printf '{%s}' "$out"
}

# finish WHAT GROUP…: the task ended; exit 0 with each group's view when it
# succeeded, 1 otherwise.
finish() {
  local what=$1 g
  shift
  [ "$TASK_STATUS" = succeeded ] || die "task $TASK_ID $TASK_STATUS in phase $TASK_PHASE: ${TASK_ERROR:-no error recorded}"
  echo "task $TASK_ID succeeded after ${TASK_SECONDS}s: $what"
  for g in "$@"; do
    call_retry GET "/v1/cluster/groups/$g"
    if [ "$OPS_CODE" = 200 ]; then
      print_group
    else
      echo "group $g: $(describe)"
    fi
  done
}

case $cmd in
create)
  [ "${#pos[@]}" -eq 0 ] || usage_error "create takes no GROUP"
  [ -z "$slots" ] || usage_error "--slots is for split"
  echo "group.sh: create a group (via $OPS_API)"
  post_accepted /v1/cluster/groups "$(body "peers=$peers")" "creating a group"
  new=$(json 'print(d["group"])')
  follow_task "$timeout"
  finish "group $new runs" "$new"
  ;;
split)
  [ "${#pos[@]}" -eq 1 ] || usage_error "split wants GROUP"
  group=${pos[0]}
  positive_int GROUP "$group"
  echo "group.sh: split group $group (via $OPS_API)"
  post_accepted "/v1/cluster/groups/$group/split" "$(body "hash_slots=$slots" "peers=$peers")" "splitting group $group"
  read -r new n <<<"$(json 'print(d["to_group"], len(d.get("hash_slots") or []))')"
  echo "moving $n hash slots of group $group into new group $new"
  follow_task "$timeout"
  finish "group $group split, $n hash slots now in group $new" "$group" "$new"
  ;;
merge)
  [ "${#pos[@]}" -eq 2 ] || usage_error "merge wants GROUP and INTO"
  group=${pos[0]} into=${pos[1]}
  positive_int GROUP "$group"
  positive_int INTO "$into"
  [ -z "$slots$peers" ] || usage_error "--slots and --peers are for split and create"
  echo "group.sh: merge group $group into group $into (via $OPS_API)"
  post_accepted "/v1/cluster/groups/$group/merge" "{\"into\":$into}" "merging group $group into group $into"
  follow_task "$timeout"
  finish "group $group merged into group $into and retired" "$into"
  ;;
retire)
  [ "${#pos[@]}" -eq 1 ] || usage_error "retire wants GROUP"
  group=${pos[0]}
  positive_int GROUP "$group"
  call DELETE "/v1/cluster/groups/$group"
  [ "$OPS_CODE" = 204 ] || die "retiring group $group was refused: $(describe)"
  echo "group $group retired: every node stops its replica and deletes its data"
  ;;
*) usage_error "unknown command $cmd" ;;
esac
