#!/usr/bin/env bash
# bench/groups.sh — what many Slot Raft Groups cost: for every group count, a
# 3-node cluster bootstrapped with `--groups N` (scripts/cluster.sh, loopback),
# measured idle (CPU of the 3 processes over BENCH_GROUPS_IDLE, resident memory)
# and under kv-put and get-linearizable at BENCH_CONCURRENCY, then stopped.
# Writes bench/results/<date>-<commit>-groups.md with one row per group count
# and the ratio of each figure to the first count's.
#
#   bench/groups.sh                                  # GROUPS_LIST="1 8 64 256", c=64
#   GROUPS_LIST="1 64" BENCH_NODE_ARGS="--rtt 50ms" bench/groups.sh
#
# Environment (defaults in brackets), besides bench/lib.sh's BENCH_*:
#   GROUPS_LIST ["1 8 64 256"]   group counts, the first is the baseline of the ratios
#   BENCH_CONCURRENCY [64]       one or more client concurrencies
#   BENCH_GROUPS_IDLE [10]       seconds of idle measurement after the cluster settled
#   BENCH_GROUPS_REST [10]       seconds at rest before it (idle groups quiesce after ten
#                                election timeouts without traffic: 5 s at the default timing)
set -euo pipefail
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-64}
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GROUPS_LIST=${GROUPS_LIST:-1 8 64 256}
IDLE_S=${BENCH_GROUPS_IDLE:-10}
REST_S=${BENCH_GROUPS_REST:-10}
begin_results groups
COMMAND="${USER_ENV}bench/groups.sh"
BASE_ARGS=${BENCH_NODE_ARGS:-}
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"

cleanup_on_exit

# rss_mib PIDS: the largest resident set of the processes, MiB.
rss_mib() {
  local p m=0 v
  for p in ${1//,/ }; do
    v=$(awk '/^VmRSS:/ { print int($2 / 1024) }' "/proc/$p/status")
    ((v > m)) && m=$v
  done
  echo "$m"
}

ROWS=$RUN/rows.tsv
: >"$ROWS"
for n in $GROUPS_LIST; do
  echo "=== $n groups (load $(load_now))"
  export BENCH_NODE_ARGS="$BASE_ARGS --groups $n"
  slotmeta_up
  EPS=$(slotmeta_endpoints)
  PIDS=$(slotmeta_pids)
  read -r settle_s _ _ < <(wait_idle "$PIDS")
  sleep "$REST_S"
  idle=$(idle_cores "$PIDS" "$IDLE_S")
  rss_idle=$(rss_mib "$PIDS")
  echo "settled after ${settle_s}s; idle: $idle cores for 3 nodes, max RSS $rss_idle MiB"
  JSONL=$RUN/groups-$n.jsonl
  : >"$JSONL"
  run_workloads slotmeta "$EPS" "$PIDS" "$JSONL" kv-put get-linearizable
  rss_load=$(rss_mib "$PIDS")
  while read -r line; do
    jq -r --arg n "$n" '[$n, .workload, .concurrency, .ops_per_sec, .latency.p99_ms, .server_cpu_ms_per_op, ([.servers[].peak_rss_mib] | max)] | @tsv' <<<"$line" >>"$ROWS"
  done <"$JSONL"
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$settle_s" "$idle" "$rss_idle" "$rss_load" >>"$RUN/idle.tsv"
  slotmeta_down
  mv "$SLOTMETA_CLUSTER_DIR" "$RUN/cluster-$n" # the next count founds a new cluster; logs stay
done
LOAD_END=$(load_now)

{
  echo "# slotmeta per-group cost, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\` (\`bench/groups.sh\`); run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`), server flags \`${BASE_ARGS:-defaults} --groups N\`"
  echo "- slotbench: closed loop, $BENCH_DURATION measured after a $BENCH_WARMUP warm-up, 200-byte values, workers spread over the 3 nodes, reads over $BENCH_KEYS preloaded keys"
  echo
  if [ -s "$RUN/failures" ]; then
    echo "**Failures:**"
    sed 's/^/- /' "$RUN/failures"
    echo
  fi
  echo "## Idle (${IDLE_S} s, from ${REST_S} s after the cluster settled)"
  echo
  echo "| groups | settled after | CPU of the 3 nodes (cores) | per node (% of a core) | max RSS per node idle | after the load |"
  echo "| --: | --: | --: | --: | --: | --: |"
  awk -F'\t' '{ printf "| %s | %s s | %.2f | %.1f %% | %s MiB | %s MiB |\n", $1, $2, $3, $3 / 3 * 100, $4, $5 }' "$RUN/idle.tsv"
  echo
  echo "## Under load"
  echo
  echo "| groups | workload | c | ops/s | vs ${GROUPS_LIST%% *} group(s) | p99 ms | server CPU ms/op | peak RSS MiB |"
  echo "| --: | --- | --: | --: | --: | --: | --: | --: |"
  awk -F'\t' '
    NR == FNR { if (!(($2 SUBSEP $3) in base)) base[$2, $3] = $4; next }
    { b = base[$2, $3]; printf "| %s | %s | %s | %.0f | %s | %.1f | %.3f | %.0f |\n", $1, $2, $3, $4, (b > 0 ? sprintf("%.0f %%", 100 * $4 / b) : "-"), $5, $6, $7 }
  ' "$ROWS" "$ROWS"
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
cat "$OUT"
[ ! -s "$RUN/failures" ] || { note "some runs failed: $(tr '\n' ';' <"$RUN/failures")"; exit 1; }
