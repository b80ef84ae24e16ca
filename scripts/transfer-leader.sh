#!/usr/bin/env bash
# transfer-leader.sh GROUP NODE [--prefer] [--timeout SECONDS]
#
# Move slot group GROUP's Raft leadership to node NODE, if that is safe:
#   1. GET  /v1/cluster/groups/GROUP/leader-transfer/preflight?target_node=NODE
#      prints the verdict and the blockers; when it is unsafe, exits 1 and
#      transfers nothing;
#   2. POST /v1/cluster/groups/GROUP/leader-transfer prints the new leader, its
#      term and how long the transfer took (a refusal — 409, or 503 busy while
#      another transfer runs or after failed ones — exits 1 with the blockers);
#   3. waits (up to --timeout, default 10 s) until GET /v1/cluster/groups/GROUP
#      shows NODE leading.
#
# The preferred-leader reconciler on the controller leader moves a group back
# to its preferred leader within seconds; the script says so when NODE is not
# the group's preferred leader. --prefer also makes NODE the preferred leader
# (PUT …/preferred-leader, after the transfer) so that it stays.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
# Exit status: 0 transferred, 1 refused or failed, 2 usage.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/transfer-leader.sh GROUP NODE [--prefer] [--timeout SECONDS]
  GROUP              slot group id
  NODE               the node that should lead it (a voter and desired peer)
  --prefer           also make NODE the group's preferred leader, so that the
                     reconciler keeps leadership there
  --timeout SECONDS  how long to wait for the group view to show NODE (10)
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

prefer=0 timeout=10
parse_args -e -m "a number of seconds" 'prefer timeout=' "$@"
[ "${#pos[@]}" -eq 2 ] || usage_error "want GROUP and NODE"
group=${pos[0]} node=${pos[1]}
positive_int GROUP "$group"
positive_int NODE "$node"
positive_int --timeout "$timeout"
base=/v1/cluster/groups/$group

echo "transfer-leader: group $group → node $node (via $OPS_API)"

# The group as it is now.
get_ok "$base"
view=$(json 'print(d["leader"], d["term"], d["preferred_leader"],
      ",".join(map(str, d.get("voters") or [])) or "none", ",".join(map(str, d.get("learners") or [])) or "none")')
read -r leader term preferred voters learners <<<"$view"
echo "group $group: leader $leader (term $term), voters $voters, learners $learners, preferred leader $preferred"

# 1. Preflight.
get_ok "$base/leader-transfer/preflight?target_node=$node"
verdict=$(json '
age = d["target_report_age_ms"]
print("preflight: %s (leader %s, term %s; target lag %s, target %s; observed by node %s %sms ago)" % (
    "safe" if d["ok"] else "UNSAFE", d["leader"], d["term"], d["target_lag"],
    "never reported" if age < 0 else "reported %sms ago" % age, d["observed_by"], d["observation_age_ms"]))
for b in d.get("blockers") or []:
    print("  - %s: %s" % (b["reason"], b["detail"]))
print("ok" if d["ok"] else "blocked:" + ",".join(b["reason"] for b in d.get("blockers") or []))')
printf '%s\n' "$verdict" | sed '$d'
case $(printf '%s\n' "$verdict" | tail -n 1) in
ok) ;;
blocked:*) die "not transferring group $group to node $node: $(printf '%s\n' "$verdict" | tail -n 1 | cut -d: -f2-)" ;;
*) die "could not read the preflight answer" ;;
esac

# 2. The transfer. A POST is sent once: the server answers when the new leader
# is observed, or says why not.
echo "transferring group $group from node $leader to node $node"
start=$(now_ms)
call POST "$base/leader-transfer" "{\"target_node\":$node}"
took=$(($(now_ms) - start))
case $OPS_CODE in
200) ;;
409) die "the transfer of group $group to node $node was refused after ${took}ms: $(describe)" ;;
503 | 000)
  # busy: refused for now (another transfer of the group runs, or its
  # back-off after failed ones); the answer says when to ask again.
  if [ "$OPS_CODE" = 503 ] && [ "$(jq_py 'print(((d or {}).get("error") or {}).get("code", ""))' 2>/dev/null)" = busy ]; then
    die "the transfer of group $group to node $node was refused for now (nothing moved; ask again later): $(describe)"
  fi
  die "the transfer of group $group to node $node did not complete after ${took}ms: $(describe)
leadership may still move; see GET $base" ;;
*) die "the transfer of group $group to node $node failed after ${took}ms: $(describe)" ;;
esac
result=$(json 'print(d["previous_leader"], d["leader"], d["term"], d["took_ms"])')
read -r previous new_leader new_term server_took <<<"$result"
[ "$new_leader" = "$node" ] || die "the server answered that node $new_leader (not $node) leads group $group at term $new_term"
echo "group $group: node $node leads at term $new_term (was node $previous); took ${server_took}ms on the server, ${took}ms in all"

# --prefer: keep it there.
if ((prefer)); then
  call_retry PUT "$base/preferred-leader" "{\"node\":$node}"
  [ "$OPS_CODE" = 200 ] || die "node $node leads group $group, but setting it as the preferred leader failed: $(describe)"
  echo "group $group: preferred leader is now node $node (was $preferred)"
  preferred=$node
fi

# 3. Wait for the group view (the controller leader's aggregated status
# reports, refreshed about once a second) to show it.
deadline=$((SECONDS + timeout))
while :; do
  get_ok "$base"
  seen=$(json 'print(d["leader"], d["term"], d["observed_by"], d["preferred_leader"])')
  read -r v_leader v_term v_by v_preferred <<<"$seen"
  if [ "$v_leader" = "$node" ] && ((v_term >= new_term)); then
    echo "group view: node $node leads group $group at term $v_term (observed by node $v_by, $(($(now_ms) - start))ms after the request)"
    break
  fi
  if [ "$v_leader" != 0 ] && ((v_term > new_term)); then
    echo "warning: group $group has already moved on to node $v_leader (term $v_term); its preferred leader is $v_preferred" >&2
    break
  fi
  ((SECONDS < deadline)) || die "node $node was reported leading group $group at term $new_term, but after ${timeout}s the group view still shows leader $v_leader at term $v_term"
  sleep 0.2
done

if [ "$preferred" != 0 ] && [ "$preferred" != "$node" ]; then
  echo "note: group $group prefers node $preferred: the preferred-leader reconciler moves leadership back there" \
    "within seconds while that intent is fresh (run with --prefer, or PUT $base/preferred-leader, to keep node $node)"
fi
