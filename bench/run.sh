#!/usr/bin/env bash
# bench/run.sh — what `make bench` runs:
#   1. the Go micro-benchmarks (go test -bench=. ./...; also written to bench/latest.txt),
#   2. a 3-node slotmeta cluster on 127.0.0.1 (scripts/cluster.sh, its own directory
#      under bench/.run and free ports), loaded by cmd/slotbench with every workload
#      at every concurrency, then stopped (always: a trap),
#   3. optionally (BENCH_PROFILE=1) bench/profile.sh: a CPU profile under kv-put c=64,
# and writes bench/results/<date>-<commit>.md.
#
# Environment (defaults in brackets):
#   BENCH_DURATION [5s]  BENCH_WARMUP [1s]  BENCH_TIMEOUT [5s]  BENCH_CONCURRENCY ["1 16 64"]
#   BENCH_WORKLOADS ["kv-put user-create get-linearizable get-local mixed subscribers-add"]
#   BENCH_KEYS [2000]    preloaded keys of the read workloads
#   BENCH_IDLE [1s]      before each run, how busy the servers are on their own
#   BENCH_SETTLE [60s]   ... and wait up to this many seconds until they use < BENCH_SETTLE_CORES [0.3]
#                        (subscribers-add leaves a membership projection backlog behind)
#   BENCH_MICRO [1]      0 skips the Go micro-benchmarks; BENCH_MICRO_TIME [1s] is their -benchtime
#   BENCH_PROFILE [0]    1 also runs bench/profile.sh
#   BENCH_NODE_ARGS      extra server flags (SLOTMETA_NODE_ARGS), e.g. "--rtt 20ms"
#   BENCH_SOURCE [worktree]  head: build a snapshot of HEAD instead (when the work tree does not build)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_WORKLOADS=${BENCH_WORKLOADS:-kv-put user-create get-linearizable get-local mixed subscribers-add}
BENCH_MICRO=${BENCH_MICRO:-1}
BENCH_MICRO_TIME=${BENCH_MICRO_TIME:-1s}
BENCH_PROFILE=${BENCH_PROFILE:-0}
begin_results
JSONL=$RUN/slotbench.jsonl
COMMAND="${USER_ENV}make bench"

cleanup_on_exit

echo "bench/run.sh: run directory $RUN (source: $SRC)"

# 1. Go micro-benchmarks, before any cluster runs.
MICRO_RC=skipped
if [ "$BENCH_MICRO" = 1 ]; then
  echo "=== Go micro-benchmarks (load $(load_now))"
  MICRO_RC=0
  (cd "$SRC" && "$GO" test -run='^$' -bench=. -benchmem -benchtime="$BENCH_MICRO_TIME" ./...) 2>&1 |
    tee "$RUN/micro.txt" || MICRO_RC=$?
  cp "$RUN/micro.txt" "$ROOT/bench/latest.txt"
fi

# 2. The cluster and the workloads.
echo "=== slotmeta: 3 nodes (load $(load_now))"
slotmeta_up
EPS=$(slotmeta_endpoints)
PIDS=$(slotmeta_pids)
# shellcheck disable=SC2086 # the workload list is word-split on purpose
run_workloads slotmeta "$EPS" "$PIDS" "$JSONL" $BENCH_WORKLOADS | tee "$RUN/slotbench.txt"
# Background work the runs left behind (subscribers-add: the membership
# projection of every uid added).
read -r DRAIN_S DRAIN_FIRST DRAIN_LAST < <(wait_idle "$PIDS")
if awk -v v="$DRAIN_LAST" -v t="$BENCH_SETTLE_CORES" 'BEGIN { exit !(v < t) }'; then
  DRAIN="the servers kept $DRAIN_FIRST cores busy on their own and were below $BENCH_SETTLE_CORES after ${DRAIN_S}s"
else
  DRAIN="the servers kept $DRAIN_FIRST cores busy on their own and still used $DRAIN_LAST cores after ${DRAIN_S}s (BENCH_SETTLE=$BENCH_SETTLE: not waited longer)"
fi
echo "after the last run $DRAIN"
LOAD_END=$(load_now)
slotmeta_down

# 3. The profile.
PROFILE_MD=""
if [ "$BENCH_PROFILE" = 1 ]; then
  echo "=== CPU profile (bench/profile.sh)"
  if BENCH_SRC=$SRC BENCH_PROFILE_OUT=$RUN/profile "$ROOT/bench/profile.sh" >"$RUN/profile.txt" 2>&1; then
    PROFILE_MD=$RUN/profile.txt
  else
    tail -n 20 "$RUN/profile.txt" >&2
    echo "FAILED: bench/profile.sh" | tee -a "$RUN/failures"
  fi
fi

{
  echo "# slotmeta benchmark, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\` (\`bench/run.sh\`); run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`, base port $SLOTMETA_BASE_PORT), server flags: \`${BENCH_NODE_ARGS:-defaults}\`"
  echo "- after the last run ($(echo "$BENCH_WORKLOADS" | awk '{ print $NF }')), $DRAIN (2 s windows)"
  echo "- slotbench: closed loop, $BENCH_DURATION measured after a $BENCH_WARMUP warm-up, request timeout $BENCH_TIMEOUT, 200-byte values, workers spread over the 3 nodes, reads over $BENCH_KEYS preloaded keys; workloads run in the order $BENCH_WORKLOADS"
  echo
  if [ -s "$RUN/failures" ]; then
    echo "**Failures:**"
    sed 's/^/- /' "$RUN/failures"
    echo
  fi
  echo "## slotbench (REST API, 3 nodes)"
  echo
  if [ -s "$JSONL" ]; then "$SLOTBENCH" report "$JSONL"; else echo "(no results)"; fi
  if [ -n "$PROFILE_MD" ]; then
    echo "## CPU profile (in-process 3-node cluster, kv-put c=64)"
    echo
    echo '```text'
    cat "$PROFILE_MD"
    echo '```'
    echo
  fi
  echo "## Go micro-benchmarks (exit status $MICRO_RC)"
  echo
  if [ -f "$RUN/micro.txt" ]; then
    echo '```text'
    grep -E '^(Benchmark|ok|FAIL|---|goos|goarch|cpu|pkg)' "$RUN/micro.txt" | grep -v 'no test files' || true
    echo '```'
  fi
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
[ ! -s "$RUN/failures" ] || { note "some runs failed: $(tr '\n' ';' <"$RUN/failures")"; exit 1; }
