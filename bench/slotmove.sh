#!/usr/bin/env bash
# bench/slotmove.sh — a live hash-slot move under a steady write load on a
# filled store: a 3-node cluster (scripts/cluster.sh, loopback, --groups 2),
# filled with SLOTMOVE_STORE_MB of values, then `slotbench slotmove` moves
# hash slot SLOTMOVE_SLOT to group 2 while writers keep writing to it and to
# other slots, and reports the latency of both during the move (a write
# refused by the fence counts from its first try to its success), the
# fenced time and the task's phases. Writes
# bench/results/<date>-<commit>-slotmove.md.
#
#   bench/slotmove.sh                              # 1024 MiB, slot 7
#   SLOTMOVE_STORE_MB=256 SLOTMOVE_RUNS=3 bench/slotmove.sh
#
# Environment (defaults in brackets): SLOTMOVE_STORE_MB [1024],
# SLOTMOVE_SLOT [7], SLOTMOVE_WRITERS [16], SLOTMOVE_RUNS [3] moves of
# different slots (7, 8, 9, …) on the same filled store, BENCH_NODE_ARGS.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STORE_MB=${SLOTMOVE_STORE_MB:-1024}
SLOT=${SLOTMOVE_SLOT:-7}
WRITERS=${SLOTMOVE_WRITERS:-16}
RUNS=${SLOTMOVE_RUNS:-3}
begin_results slotmove
COMMAND="${USER_ENV}bench/slotmove.sh"
# The balancer is off: it would even out the slot counts these moves skew.
export BENCH_NODE_ARGS="${BENCH_NODE_ARGS:-} --groups 2 --balancer=false"

cleanup_on_exit

slotmeta_up
EPS=$(slotmeta_endpoints)
JSONL=$RUN/slotmove.jsonl
TABLES=$RUN/slotmove.txt
: >"$TABLES"
for i in $(seq 0 $((RUNS - 1))); do
  skip=false
  [ "$i" = 0 ] || skip=true
  slot=$((SLOT + i))
  echo "=== move of hash slot $slot (load $(load_now))"
  "$SLOTBENCH" slotmove -endpoints "$EPS" -store-mb "$STORE_MB" -skip-fill="$skip" -slot "$slot" -to-group 2 \
    -writers "$WRITERS" -json "$JSONL" | tee -a "$TABLES"
  echo >>"$TABLES"
done
DISK=$(du -sm "$SLOTMETA_CLUSTER_DIR"/node1/data | cut -f1)
LOAD_END=$(load_now)
{
  echo "# slotmeta live hash-slot moves, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\` (\`bench/slotmove.sh\`); run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`), server flags \`$BENCH_NODE_ARGS\`; node 1's data directory after the runs: $DISK MiB"
  echo "- store filled with $STORE_MB MiB of values over every hash slot (60 KiB of random letters each, so that the store is as large on disk), then $WRITERS closed-loop writers of 200-byte values, half on 64 keys of the moving slot, half on 64 keys of other slots; $RUNS moves of hash slots $SLOT… to group 2"
  echo
  echo '```text'
  cat "$TABLES"
  echo '```'
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
