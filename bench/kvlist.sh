#!/usr/bin/env bash
# bench/kvlist.sh — how fast business keys are listed by prefix (GET /v1/kv,
# issue 54): a 3-node cluster on loopback bootstrapped with `--groups
# $KVLIST_GROUPS` (scripts/cluster.sh), KVLIST_KEYS keys written through the
# batch API (`slotbench kvlist -fill`), then the whole prefix listed
# KVLIST_ROUNDS times, one listing at a time and then KVLIST_C at once, with
# values and keys only. Writes bench/results/<date>-<commit>-kvlist.md.
#
#   bench/kvlist.sh                       # 1 000 000 keys over 64 groups
#   KVLIST_KEYS=100000 bench/kvlist.sh
#
# Environment (defaults in brackets), besides bench/lib.sh's BENCH_*:
#   KVLIST_KEYS [1000000]  KVLIST_GROUPS [64]  KVLIST_C [2]  KVLIST_ROUNDS [3]
#   KVLIST_VALUE [100]     bytes of each value
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KEYS=${KVLIST_KEYS:-1000000}
NGROUPS=${KVLIST_GROUPS:-64}
CONC=${KVLIST_C:-2}
ROUNDS=${KVLIST_ROUNDS:-3}
VALUE=${KVLIST_VALUE:-100}
begin_results kvlist
COMMAND="${USER_ENV}bench/kvlist.sh"
cleanup_on_exit

export BENCH_NODE_ARGS="${BENCH_NODE_ARGS:-} --groups $NGROUPS"
slotmeta_up
EPS=$(slotmeta_endpoints)
PIDS=$(slotmeta_pids)
LOG=$RUN/kvlist.txt
{
  echo "fill: $KEYS keys over $NGROUPS groups"
  "$SLOTBENCH" kvlist -endpoints "$EPS" -pids "$PIDS" -prefix sbl. -fill "$KEYS" -c 8 -value-size "$VALUE" -list=false
  read -r settle_s _ _ < <(wait_idle "$PIDS")
  echo "settled after ${settle_s}s"
  for r in $(seq "$ROUNDS"); do
    for ko in false true; do
      echo "--- round $r, one listing, keys_only=$ko (load $(load_now))"
      "$SLOTBENCH" kvlist -endpoints "$EPS" -pids "$PIDS" -prefix sbl. -c 1 -keys-only="$ko"
      echo "--- round $r, $CONC listings at once, keys_only=$ko (load $(load_now))"
      "$SLOTBENCH" kvlist -endpoints "$EPS" -pids "$PIDS" -prefix sbl. -c "$CONC" -keys-only="$ko"
    done
  done
} 2>&1 | tee "$LOG"
LOAD_END=$(load_now)
slotmeta_down

{
  echo "# slotmeta key listing, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\`; run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`), server flags \`$BENCH_NODE_ARGS\`"
  echo "- $KEYS keys \`sbl.000000000\`… of $VALUE-byte values; each listing \`GET /v1/kv?prefix=sbl.&limit=1000\` page after page, the endpoints in turn"
  echo
  echo '```'
  cat "$LOG"
  echo '```'
  echo
  echo "Medians of the rounds (keys listed a second, all listings together):"
  echo
  for what in "one listing, keys_only=false" "$CONC listings at once, keys_only=false" "one listing, keys_only=true" "$CONC listings at once, keys_only=true"; do
    awk -v w="$what" '$0 ~ "^--- round [0-9]+, " w { want = 1; next } want && /^kvlist / { for (i = 1; i <= NF; i++) if ($i == "keys/s" || $i == "keys/s,") print $(i - 1); want = 0 }' "$LOG" |
      sort -n | awk -v w="$what" '{ v[NR] = $1 } END { if (NR) printf "- %s: %.0f keys/s (%d rounds)\n", w, v[int((NR + 1) / 2)], NR }'
  done
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
