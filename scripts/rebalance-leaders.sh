#!/usr/bin/env bash
# rebalance-leaders.sh [--timeout SECONDS] [--dry-run]
#
# Spread the groups' preferred leaders evenly over the nodes, then wait for
# the live leaders to follow:
#   1. for each group in id order, choose among its desired peers (those whose
#      node is active) the node with the fewest groups chosen so far, ties to
#      the lowest id;
#   2. PUT /v1/cluster/groups/{id}/preferred-leader for every group — those
#      whose preference changes, and the others too, so that no intent is
#      stale (the reconciler ignores stale ones);
#   3. wait (up to --timeout, default 60 s) until every group's live leader
#      equals its preferred leader: the preferred-leader reconciler on the
#      controller leader does the transfers. Progress is printed as it goes;
#      on timeout, the groups that did not converge and the latest decision
#      about each (GET /v1/cluster/decisions), exit 1.
# --dry-run prints the plan and changes nothing.
#
# Environment: SLOTMETA_API (any node, default http://127.0.0.1:8081),
# SLOTMETA_TOKEN (sent as a bearer token when set), SLOTMETA_HTTP_TIMEOUT.
# Exit status: 0 balanced, 1 refused, failed or not converged, 2 usage.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/rebalance-leaders.sh [--timeout SECONDS] [--dry-run]
  --timeout SECONDS  how long to wait for the leaders to follow (60)
  --dry-run          print the plan, change nothing
env: SLOTMETA_API (http://127.0.0.1:8081), SLOTMETA_TOKEN, SLOTMETA_HTTP_TIMEOUT (20)
EOF
}

# shellcheck source-path=SCRIPTDIR source=ops-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/ops-lib.sh"

timeout=60 dry_run=0
parse_args -e -n -m "a number of seconds" 'timeout= dry-run' "$@"
positive_int --timeout "$timeout"

echo "rebalance-leaders: spreading preferred leaders (via $OPS_API)"
get_ok /v1/cluster/nodes
cp "$OPS_TMP/body" "$OPS_TMP/nodes.json"
get_ok /v1/cluster/groups
cp "$OPS_TMP/body" "$OPS_TMP/groups.json"

# The plan: "GROUP CURRENT_PREFERENCE NEW_PREFERENCE LEADER" lines, then the
# table that shows it.
plan=$(json '
nodes = {n["id"]: n.get("state", "") for n in json.load(open(sys.argv[2]))["items"]}
groups = sorted(d["items"], key=lambda g: g["id"])
if not groups:
    print("ERROR the cluster has no groups")
    sys.exit(0)
count = {}
lines, table = [], []
for g in groups:
    peers = sorted({p["node"] for p in g.get("desired_peers") or []})
    cands = [n for n in peers if nodes.get(n) == "active"]
    if not cands:
        print("ERROR group %d has no active desired peer (peers %s; states %s); nothing changed" % (
            g["id"], ",".join(map(str, peers)) or "none",
            ", ".join("node %d %s" % (n, nodes.get(n, "unregistered")) for n in peers) or "-"))
        sys.exit(0)
    for n in cands:
        count.setdefault(n, 0)
    pick = min(cands, key=lambda n: (count[n], n))
    count[pick] += 1
    lines.append("%d %d %d %d" % (g["id"], g["preferred_leader"], pick, g["leader"]))
    table.append("  group %-4d peers %-12s leader %-4s preferred %-4s -> %d%s" % (
        g["id"], ",".join(map(str, peers)), g["leader"] or "none", g["preferred_leader"] or "none", pick,
        "" if pick == g["preferred_leader"] else "  (changes)"))
print("\n".join(lines))
print("PLAN")
print("\n".join(table))
print("  preferred groups per node: " + ", ".join("node %d: %d" % (n, c) for n, c in sorted(count.items())))
' "$OPS_TMP/nodes.json")
[[ $plan != ERROR\ * ]] || die "${plan#ERROR }"
printf '%s\n' "$plan" | sed '1,/^PLAN$/d'
mapfile -t steps < <(printf '%s\n' "$plan" | sed '/^PLAN$/,$d')
((dry_run)) && { echo "dry run: nothing changed"; exit 0; }

# Set (or refresh) every preference. A PUT is idempotent, so a retryable
# answer is retried.
for step in "${steps[@]}"; do
  read -r group current want _ <<<"$step"
  call_retry PUT "/v1/cluster/groups/$group/preferred-leader" "{\"node\":$want}"
  [ "$OPS_CODE" = 200 ] || die "setting group $group's preferred leader to node $want failed: $(describe)"
  if [ "$current" = "$want" ]; then
    echo "group $group: preferred leader node $want (unchanged, intent refreshed)"
  else
    echo "group $group: preferred leader node $current -> node $want"
  fi
  # The answer's view comes from the controller leader, which may not have
  # applied the change yet; the wait below checks the intent again.
  got=$(json 'print(d["preferred_leader"])')
  [ "$got" = "$want" ] || echo "  (the answer still shows preferred leader $got: a view from before the change; checked again below)"
done

# Wait for every group's live leader to be its preferred leader.
# pending: "GROUP LEADER TERM PREFERRED WANTED" for each group not there yet
# (led by another node, or whose preference is not the one set above).
pending_of() {
  json '
want = {}
for step in sys.argv[2:]:  # GROUP CURRENT NEW LEADER
    g, _, new, _ = map(int, step.split())
    want[g] = new
for g in d["items"]:
    if g["id"] in want and not (g["leader"] == g["preferred_leader"] == want[g["id"]]):
        print(g["id"], g["leader"], g["term"], g["preferred_leader"], want[g["id"]])
' "${steps[@]}"
}

start=$SECONDS deadline=$((SECONDS + timeout)) last="" last_print=0
while :; do
  get_ok /v1/cluster/groups
  pending=$(pending_of)
  if [ -z "$pending" ]; then
    echo "[$((SECONDS - start))s] every group (${#steps[@]}) is led by its preferred leader"
    json '
count = {}
for g in d["items"]:
    count[g["leader"]] = count.get(g["leader"], 0) + 1
print("leaders: " + ", ".join("node %d leads %d" % (n, c) for n, c in sorted(count.items())))'
    exit 0
  fi
  n=$(printf '%s\n' "$pending" | grep -c .)
  if [ "$pending" != "$last" ] || ((SECONDS - last_print >= 5)); then
    summary=$(printf '%s\n' "$pending" | awk '{ printf "%sgroup %s (leader %s, term %s, prefers %s%s)", sep, $1, ($2 == 0 ? "none" : $2), $3, $4, ($4 == $5 ? "" : ", set to " $5); sep = "; " }')
    echo "[$((SECONDS - start))s] $((${#steps[@]} - n))/${#steps[@]} groups converged; waiting for $summary"
    last=$pending last_print=$SECONDS
  fi
  if ((SECONDS >= deadline)); then
    break
  fi
  sleep 1
done

# Timed out: what the reconciler last decided about each group left.
echo "rebalance-leaders: $n group(s) did not converge within ${timeout}s:" >&2
call_retry GET /v1/cluster/decisions
if [ "$OPS_CODE" = 200 ]; then
  printf '%s\n' "$pending" >"$OPS_TMP/pending"
  json '
import time
now = time.time() * 1000
latest = {}
for x in d["items"]:  # newest first
    latest.setdefault(x["group"], x)
for line in open(sys.argv[2]):
    g, leader, term, pref, want = map(int, line.split())
    x = latest.get(g)
    why = "no decision recorded" if x is None else "latest decision %.0fs ago: %s %s%s" % (
        (now - x["at_ms"]) / 1000, x["kind"], x["reason"], " - " + x["detail"] if x.get("detail") else "")
    print("  group %d: leader %s (term %d), preferred %d%s; %s" % (
        g, leader or "none", term, pref, "" if pref == want else " (set to %d)" % want, why))
' "$OPS_TMP/pending" >&2
else
  printf '%s\n' "$pending" | awk '{ printf "  group %s: leader %s (term %s), preferred %s (set to %s)\n", $1, $2, $3, $4, $5 }' >&2
  echo "  (GET /v1/cluster/decisions failed: $(describe))" >&2
fi
exit 1
