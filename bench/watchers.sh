#!/usr/bin/env bash
# bench/watchers.sh — what 1 000 watchers cost the writes (issues 27 and 49):
# a 3-node cluster on loopback (scripts/cluster.sh), the kv-put-watched
# workload at -c WATCH_C over WATCH_KEYS keys, each round run three ways —
# no watchers, WATCH_N watchers each on a stream of its own (GET /v1/watch),
# and WATCH_N watchers over WATCH_STREAMS multiplexed streams per node (GET
# /v1/watch/stream, client.Watcher) — in turn, WATCH_ROUNDS times. Every
# write is delivered to exactly one watcher. Reports each way's median
# writes/s, its ratio to no watchers, and the servers' CPU a write. Writes
# bench/results/<date>-<commit>-watchers.md.
#
#   bench/watchers.sh
#   WATCH_ROUNDS=5 WATCH_DURATION=10s bench/watchers.sh
#
# Environment (defaults in brackets), besides bench/lib.sh's BENCH_*:
#   WATCH_N [1000]  WATCH_KEYS [1000]  WATCH_C [64]  WATCH_STREAMS [1]
#   WATCH_ROUNDS [3]  WATCH_DURATION [5s]  WATCH_WARMUP [1s]
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

N=${WATCH_N:-1000}
KEYS=${WATCH_KEYS:-1000}
CONC=${WATCH_C:-64}
STREAMS=${WATCH_STREAMS:-1}
ROUNDS=${WATCH_ROUNDS:-3}
DURATION=${WATCH_DURATION:-5s}
WARMUP=${WATCH_WARMUP:-1s}
begin_results watchers
COMMAND="${USER_ENV}bench/watchers.sh"
cleanup_on_exit

slotmeta_up
EPS=$(slotmeta_endpoints)
PIDS=$(slotmeta_pids)
JSONL=$RUN/watchers.jsonl
LOG=$RUN/watchers.txt
{
  for r in $(seq "$ROUNDS"); do
    for way in none streams multiplexed; do
      case $way in
      none) flags=() ;;
      streams) flags=(-watchers "$N") ;;
      multiplexed) flags=(-watchers "$N" -watch-streams "$STREAMS") ;;
      esac
      echo "--- round $r, $way (load $(load_now))"
      "$SLOTBENCH" -endpoints "$EPS" -pids "$PIDS" -workload kv-put-watched -keys "$KEYS" -c "$CONC" \
        -duration "$DURATION" -warmup "$WARMUP" -run-id "w$r$way" "${flags[@]}" -json "$JSONL.$way"
    done
  done
} 2>&1 | tee "$LOG"
LOAD_END=$(load_now)
slotmeta_down

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.4f", v[int((NR + 1) / 2)] }'; }
field() { sed -E "s/.*\"$1\":([0-9.e+-]+).*/\1/" "$JSONL.$2" | median; }
{
  echo "# slotmeta writes beside $N watchers, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\`; run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`)"
  echo "- \`slotbench -workload kv-put-watched -keys $KEYS -c $CONC -duration $DURATION -warmup $WARMUP\`, with \`-watchers $N\` (a stream each) or \`-watchers $N -watch-streams $STREAMS\` (multiplexed, per node); the three ways in turn, $ROUNDS rounds"
  echo
  echo "| watchers | writes/s (median of $ROUNDS) | ratio to none | servers' CPU a write, ms (median) |"
  echo "| --- | --- | --- | --- |"
  base=$(field ops_per_sec none)
  for way in none streams multiplexed; do
    ops=$(field ops_per_sec "$way")
    awk -v w="$way" -v o="$ops" -v b="$base" -v c="$(field server_cpu_ms_per_op "$way")" \
      'BEGIN { printf "| %s | %.0f | %.2fx | %.3f |\n", w, o, o / b, c }'
  done
  echo
  echo '```'
  cat "$LOG"
  echo '```'
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
