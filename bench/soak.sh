#!/usr/bin/env bash
# bench/soak.sh — what `make soak` runs: a 3-node cluster (scripts/cluster.sh,
# 127.0.0.1, its own directory under bench/.run) under steady load for
# SOAK_DURATION, sampling every server's memory, goroutines and projection
# backlog, then a verdict: memory and goroutines must be flat.
#
# The load rotates segments of SOAK_SEGMENT through SOAK_WORKLOADS at
# concurrency SOAK_C (slotbench, closed loop). After each segment every
# server is sampled: RSS (/proc), and from its /metrics the goroutines, the
# Go heap in use and retained (sys − released), the store's block cache and
# memtables, and the projection backlog.
#
# Flat means, per server: after SOAK_WARM (caches and memtables fill up
# first), the largest RSS of the second half of the samples is at most
# SOAK_MAX_GROWTH percent above the largest of the first half, goroutines at
# most SOAK_MAX_GOROUTINE_GROWTH more, and RSS never above SOAK_MAX_RSS MiB.
# The samples also show the Go heap (in use, retained) and the store's block
# cache and memtables, the bounded parts of memory, so a filling cache can be
# told from a leak. The verdict and the samples go to
# bench/results/<date>-<commit>-soak.md; the exit status is 1 when memory or
# goroutines grew.
#
# Environment (defaults in brackets):
#   SOAK_DURATION [10m]  SOAK_SEGMENT [30s]  SOAK_C [16]  SOAK_WARM [120s]
#   SOAK_WORKLOADS ["mixed kv-put subscribers-add user-create"]
#   SOAK_MAX_GROWTH [10] (percent)  SOAK_MAX_GOROUTINE_GROWTH [100]  SOAK_MAX_RSS [300] (MiB)
#   BENCH_NODE_ARGS (extra server flags), BENCH_SOURCE [worktree] (see bench/run.sh)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SOAK_DURATION=${SOAK_DURATION:-10m}
SOAK_SEGMENT=${SOAK_SEGMENT:-30s}
SOAK_C=${SOAK_C:-16}
SOAK_WARM=${SOAK_WARM:-120s}
SOAK_WORKLOADS=${SOAK_WORKLOADS:-mixed kv-put subscribers-add user-create}
SOAK_MAX_GROWTH=${SOAK_MAX_GROWTH:-10}
SOAK_MAX_RSS=${SOAK_MAX_RSS:-300}
SOAK_MAX_GOROUTINE_GROWTH=${SOAK_MAX_GOROUTINE_GROWTH:-100}
begin_results soak
SAMPLES=$RUN/soak-samples.tsv
JSONL=$RUN/slotbench.jsonl

seconds() { # 10m, 30s, 90 → seconds
  case $1 in *m) echo $((${1%m} * 60)) ;; *s) echo "${1%s}" ;; *) echo "$1" ;; esac
}

cleanup_on_exit

metric_of() { # metric_of METRICS_TEXT NAME: the sum of NAME's samples
  awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%.0f", s }' <<<"$1"
}
mib_of() { echo $(($(metric_of "$1" "$2") / 1048576)); }

sample() { # sample ELAPSED SEGMENT_WORKLOAD: one line per server
  local i pid url rss m
  for i in 1 2 3; do
    pid=$(cat "$SLOTMETA_CLUSTER_DIR/node$i/pid")
    url="http://127.0.0.1:$((SLOTMETA_BASE_PORT + i - 1))"
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    m=$(curl -fsS --max-time 5 "$url/metrics" 2>/dev/null || true)
    printf '%s\t%s\tn%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$i" "$((rss / 1024))" \
      "$(metric_of "$m" go_goroutines)" "$(mib_of "$m" go_memstats_heap_inuse_bytes)" \
      "$(($(metric_of "$m" go_memstats_heap_sys_bytes) / 1048576 - $(metric_of "$m" go_memstats_heap_released_bytes) / 1048576))" \
      "$(mib_of "$m" slotmeta_store_block_cache_bytes)" "$(mib_of "$m" slotmeta_store_memtable_bytes)" \
      "$(metric_of "$m" slotmeta_projection_backlog)" >>"$SAMPLES"
  done
}

echo "bench/soak.sh: $SOAK_DURATION of ${SOAK_WORKLOADS// /, } at c=$SOAK_C in $SOAK_SEGMENT segments; run directory $RUN"
slotmeta_up
EPS=$(slotmeta_endpoints)
PIDS=$(slotmeta_pids)
printf 'elapsed_s\tworkload\tnode\trss_mib\tgoroutines\theap_inuse_mib\theap_retained_mib\tblock_cache_mib\tmemtables_mib\tprojection_backlog\n' >"$SAMPLES"
sample 0 start
total=$(seconds "$SOAK_DURATION")
start=$SECONDS
read -r -a workloads <<<"$SOAK_WORKLOADS"
k=0
preload=true
while ((SECONDS - start < total)); do
  w=${workloads[$((k % ${#workloads[@]}))]}
  k=$((k + 1))
  "$SLOTBENCH" -endpoints "$EPS" -pids "$PIDS" -workload "$w" -c "$SOAK_C" -duration "$SOAK_SEGMENT" \
    -warmup 0s -timeout "$BENCH_TIMEOUT" -keys "$BENCH_KEYS" -key-prefix sbpre -preload="$preload" \
    -label "soak segment $k" -json "$JSONL" >"$RUN/segment-$k.txt" 2>&1 ||
    echo "FAILED: segment $k ($w), see segment-$k.txt" | tee -a "$RUN/failures"
  if is_read_workload "$w"; then preload=false; fi
  sample $((SECONDS - start)) "$w"
  tail -n 3 "$SAMPLES" | awk -F'\t' '{ printf "  %4ss %-16s %s rss %s MiB, %s goroutines, heap %s/%s MiB (in use/retained), block cache %s, memtables %s MiB, backlog %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
done
LOAD_END=$(load_now)
slotmeta_down

# The verdict: per node, after the warm-up, the first half against the second.
warm=$(seconds "$SOAK_WARM")
VERDICT=$RUN/verdict.txt
awk -F'\t' -v warm="$warm" -v total=$((SECONDS - start)) -v growth="$SOAK_MAX_GROWTH" -v ggrowth="$SOAK_MAX_GOROUTINE_GROWTH" -v cap="$SOAK_MAX_RSS" '
  NR == 1 || $1 < warm { next }
  {
    mid = warm + (total - warm) / 2
    if ($1 <= mid) { if ($4 > r0[$3]) r0[$3] = $4; if ($5 > g0[$3]) g0[$3] = $5 }
    else { if ($4 > r1[$3]) r1[$3] = $4; if ($5 > g1[$3]) g1[$3] = $5 }
    seen[$3] = 1
  }
  END {
    bad = 0
    for (n in seen) {
      ok = (r0[n] > 0 && r1[n] > 0 && r1[n] <= r0[n] * (1 + growth / 100) && g1[n] <= g0[n] + ggrowth && r1[n] <= cap && r0[n] <= cap)
      if (!ok) bad = 1
      printf "%s: largest RSS %d → %d MiB (%+.0f%%), goroutines %d → %d: %s\n", n, r0[n], r1[n], r0[n] ? 100 * (r1[n] - r0[n]) / r0[n] : 0, g0[n], g1[n], ok ? "flat" : "GREW"
    }
    exit bad
  }' "$SAMPLES" | sort >"$VERDICT" && FLAT=1 || FLAT=0
cat "$VERDICT"

{
  echo "# slotmeta soak, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`${USER_ENV}make soak\` (\`bench/soak.sh\`); run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`), server flags: \`${BENCH_NODE_ARGS:-defaults}\`"
  echo "- load: $SOAK_DURATION of $SOAK_SEGMENT slotbench segments rotating ${SOAK_WORKLOADS// /, } at c=$SOAK_C"
  echo
  echo "## Verdict: $([ "$FLAT" = 1 ] && echo "flat" || echo "**memory or goroutines grew**")"
  echo
  echo "After a $SOAK_WARM warm-up, the largest value of the first half → the largest of the second half (allowed: +$SOAK_MAX_GROWTH % RSS, +$SOAK_MAX_GOROUTINE_GROWTH goroutines, RSS ≤ $SOAK_MAX_RSS MiB)."
  echo
  sed 's/^/- /' "$VERDICT"
  echo
  if [ -s "$RUN/failures" ]; then
    echo "**Failed segments:**"
    sed 's/^/- /' "$RUN/failures"
    echo
  fi
  echo "## Samples (after each segment)"
  echo
  echo "| elapsed s | segment | node | RSS MiB | goroutines | Go heap in use MiB | Go heap retained MiB | store block cache MiB | store memtables MiB | projection backlog |"
  echo "| --: | --- | --- | --: | --: | --: | --: | --: | --: | --: |"
  tail -n +2 "$SAMPLES" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10 }'
  echo
  echo "## Segments"
  echo
  if [ -s "$JSONL" ]; then "$SLOTBENCH" report "$JSONL"; else echo "(no results)"; fi
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
[ "$FLAT" = 1 ] || exit 1
[ ! -s "$RUN/failures" ] || exit 1
