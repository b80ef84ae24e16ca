#!/usr/bin/env bash
# bench/compare-etcd.sh — slotmeta (3 nodes) against etcd 3.6 (3 members) on
# this machine, in one run, with the same slotbench workloads:
#   - builds etcd v3.6.16 from its module (bench/etcd: a wrapper module, as
#     `go install` refuses the server module's replace directives) unless
#     ETCD names an etcd binary,
#   - starts a 3-member etcd on 127.0.0.1 (free ports, data under this run's
#     directory, --quota-backend-bytes $ETCD_QUOTA) and a 3-node slotmeta
#     cluster (scripts/cluster.sh),
#   - runs each workload at each concurrency against etcd through its own Go
#     client (clientv3, gRPC: etcd+grpc) and its HTTP/JSON gateway (etcd), and
#     against slotmeta with requests spread over the nodes (slotmeta) and
#     through the route-aware Go client (slotmeta+smart), back to back
#     (COMPARE_MODE=interleaved: every system for every workload and
#     concurrency, both clusters up; sequential: all of etcd, stop it, then
#     all of slotmeta),
#   - stops exactly the processes it started (always: a trap) and writes
#     bench/results/<date>-<commit>-etcd.md: throughput, p50/p99 and server
#     CPU per operation, the ratios against etcd+grpc first.
#
# Environment: COMPARE_WORKLOADS ["kv-put get-linearizable get-local batch-put"],
# COMPARE_MODE [interleaved], COMPARE_SMART [1: also through the routed
# client], COMPARE_GATEWAY [1: also etcd's HTTP gateway], ETCD [built],
# ETCD_QUOTA [268435456], BENCH_CONCURRENCY ["1 64"] and bench/run.sh's
# BENCH_DURATION, BENCH_WARMUP, BENCH_TIMEOUT, BENCH_KEYS, BENCH_IDLE,
# BENCH_NODE_ARGS, BENCH_SOURCE.
set -euo pipefail
# shellcheck source=bench/lib.sh
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-1 64}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COMPARE_WORKLOADS=${COMPARE_WORKLOADS:-kv-put get-linearizable get-local batch-put}
COMPARE_MODE=${COMPARE_MODE:-interleaved}
COMPARE_SMART=${COMPARE_SMART:-1}
COMPARE_GATEWAY=${COMPARE_GATEWAY:-1}
ETCD_MODULE_VERSION=v3.6.16
ETCD_QUOTA=${ETCD_QUOTA:-268435456} # 256 MiB
begin_results etcd
JSONL=$RUN/compare.jsonl
case $COMPARE_MODE in interleaved | sequential) ;; *) die "COMPARE_MODE=$COMPARE_MODE: want interleaved or sequential" ;; esac

# ---- etcd --------------------------------------------------------------------

if [ -z "${ETCD:-}" ]; then
  echo "building etcd $ETCD_MODULE_VERSION (bench/etcd)"
  (cd "$ROOT/bench/etcd" && nice -n 10 "$GO" build -o "$RUN/etcd-$ETCD_MODULE_VERSION" .) >"$RUN/etcd-build.log" 2>&1 ||
    { tail -n 20 "$RUN/etcd-build.log" >&2; die "could not build etcd from bench/etcd"; }
  ETCD=$RUN/etcd-$ETCD_MODULE_VERSION
fi
ETCD_VERSION=$("$ETCD" --version 2>/dev/null | head -n1)
ETCD_DIR=$RUN/etcd
ETCD_PIDS=()
ETCD_BASE=""

# etcd_ours PID I: PID is still the etcd we started for member I.
etcd_ours() {
  local arg
  local -a argv=()
  { mapfile -d '' -t argv <"/proc/$1/cmdline"; } 2>/dev/null || return 1
  [ "${#argv[@]}" -gt 0 ] && [ "${argv[0]}" = "$ETCD" ] || return 1
  for arg in "${argv[@]}"; do [ "$arg" = "$ETCD_DIR/e$2" ] && return 0; done
  return 1
}

etcd_up() {
  local i c p cluster="" deadline
  ETCD_BASE=$("$SLOTBENCH" freeport -offsets 0,1,2,3,4,5) || die "no free ports for etcd"
  for i in 1 2 3; do
    cluster+="${cluster:+,}e$i=http://127.0.0.1:$((ETCD_BASE + 2 * (i - 1) + 1))"
  done
  mkdir -p "$ETCD_DIR"
  for i in 1 2 3; do
    c=$((ETCD_BASE + 2 * (i - 1)))
    p=$((c + 1))
    "$ETCD" --name "e$i" --data-dir "$ETCD_DIR/e$i" \
      --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
      --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
      --initial-cluster "$cluster" --initial-cluster-token "slotbench-$$" --initial-cluster-state new \
      --quota-backend-bytes "$ETCD_QUOTA" --logger zap --log-outputs stderr \
      </dev/null >"$ETCD_DIR/e$i.log" 2>&1 &
    ETCD_PIDS+=($!)
  done
  deadline=$((SECONDS + 60))
  for i in 1 2 3; do
    c=$((ETCD_BASE + 2 * (i - 1)))
    until curl -q -s --noproxy '*' --max-time 2 "http://127.0.0.1:$c/health" 2>/dev/null | grep -q '"health":"true"'; do
      etcd_ours "${ETCD_PIDS[$((i - 1))]}" "$i" || { tail -n 20 "$ETCD_DIR/e$i.log" >&2; die "etcd member $i exited"; }
      ((SECONDS < deadline)) || { tail -n 20 "$ETCD_DIR/e$i.log" >&2; die "etcd member $i not healthy after 60s"; }
      sleep 0.3
    done
  done
  echo "etcd: 3 members on 127.0.0.1:$ETCD_BASE,$((ETCD_BASE + 2)),$((ETCD_BASE + 4)) (pids ${ETCD_PIDS[*]}), $ETCD_VERSION"
}

etcd_down() {
  local i pid deadline
  [ "${#ETCD_PIDS[@]}" -gt 0 ] || return 0
  for i in "${!ETCD_PIDS[@]}"; do
    pid=${ETCD_PIDS[$i]}
    if etcd_ours "$pid" $((i + 1)); then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  deadline=$((SECONDS + 15))
  for i in "${!ETCD_PIDS[@]}"; do
    pid=${ETCD_PIDS[$i]}
    while etcd_ours "$pid" $((i + 1)) && ((SECONDS < deadline)); do sleep 0.2; done
    if etcd_ours "$pid" $((i + 1)); then
      note "etcd member $((i + 1)) (pid $pid) did not stop after SIGTERM; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  ETCD_PIDS=()
  rm -rf "$ETCD_DIR"/e{1,2,3}
  echo "etcd: stopped"
}

etcd_endpoints() {
  echo "http://127.0.0.1:$ETCD_BASE,http://127.0.0.1:$((ETCD_BASE + 2)),http://127.0.0.1:$((ETCD_BASE + 4))"
}

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  etcd_down || true
  slotmeta_down || true
  tidy_run
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Everything from here on is also logged; no subshell, so that the trap sees
# what was started.
exec > >(tee "$RUN/compare.txt") 2>&1
echo "compare-etcd.sh: run directory $RUN (source: $SRC, mode $COMPARE_MODE)"
# etcd_runs W C PRELOAD / slotmeta_runs W C PRELOAD: one workload at one
# concurrency through each of the system's clients (the first preloads).
etcd_runs() {
  bench_one etcd "$E_EPS" "$E_PIDS" "$JSONL" "$1" "$2" "$3" grpc
  if [ "$COMPARE_GATEWAY" = 1 ]; then bench_one etcd "$E_EPS" "$E_PIDS" "$JSONL" "$1" "$2" false; fi
}
slotmeta_runs() {
  bench_one slotmeta "$S_EPS" "$S_PIDS" "$JSONL" "$1" "$2" "$3"
  if [ "$COMPARE_SMART" = 1 ]; then bench_one slotmeta "$S_EPS" "$S_PIDS" "$JSONL" "$1" "$2" false smart; fi
}
# each_run SYSTEM…: every workload at every concurrency, the read keys
# preloaded by each system's first read run.
each_run() {
  local w c sys
  local -A pre=()
  for w in $COMPARE_WORKLOADS; do
    for c in $BENCH_CONCURRENCY; do
      for sys in "$@"; do
        if is_read_workload "$w" && [ -z "${pre[$sys]:-}" ]; then
          "${sys}_runs" "$w" "$c" true
          pre[$sys]=1
        else
          "${sys}_runs" "$w" "$c" false
        fi
      done
    done
  done
}
if [ "$COMPARE_MODE" = interleaved ]; then
  etcd_up
  slotmeta_up
  E_EPS=$(etcd_endpoints) E_PIDS=$(IFS=,; echo "${ETCD_PIDS[*]}")
  S_EPS=$(slotmeta_endpoints) S_PIDS=$(slotmeta_pids)
  echo "idle cores, 5 s, both clusters up: etcd $(idle_cores "$E_PIDS" 5), slotmeta $(idle_cores "$S_PIDS" 5)" | tee "$RUN/idle.txt"
  each_run etcd slotmeta
else
  etcd_up
  E_EPS=$(etcd_endpoints) E_PIDS=$(IFS=,; echo "${ETCD_PIDS[*]}")
  echo "idle cores, 5 s: etcd $(idle_cores "$E_PIDS" 5)" | tee "$RUN/idle.txt"
  each_run etcd
  etcd_down
  slotmeta_up
  S_EPS=$(slotmeta_endpoints) S_PIDS=$(slotmeta_pids)
  echo "idle cores, 5 s: slotmeta $(idle_cores "$S_PIDS" 5)" | tee -a "$RUN/idle.txt"
  each_run slotmeta
fi
LOAD_END=$(load_now)
etcd_down
slotmeta_down

{
  echo "# slotmeta vs etcd, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`${USER_ENV}bench/compare-etcd.sh\` (mode $COMPARE_MODE, $BENCH_DURATION per run, c = $BENCH_CONCURRENCY); run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- etcd: $ETCD_VERSION, 3 members on 127.0.0.1, defaults (heartbeat 100 ms, election 1000 ms) and --quota-backend-bytes $ETCD_QUOTA; etcd+grpc is slotbench through etcd's Go client (clientv3 $ETCD_MODULE_VERSION, one client per member), etcd its v3 HTTP/JSON gateway (/v3/kv/put, /v3/kv/range with serializable=false|true)"
  echo "- slotmeta: 3 nodes on 127.0.0.1 (scripts/cluster.sh), server flags \`${BENCH_NODE_ARGS:-defaults}\` (defaults: 1 slot group on 3 nodes, 2 Raft workers, RTT 50 ms, election 10 ticks)"
  echo "- slotbench: closed loop, $BENCH_DURATION measured after a $BENCH_WARMUP warm-up, timeout $BENCH_TIMEOUT, 200-byte values, workers spread over the 3 members/nodes, reads over $BENCH_KEYS preloaded keys; mode $COMPARE_MODE"
  echo "- $(tr '\n' ' ' <"$RUN/idle.txt")"
  echo
  if [ -s "$RUN/failures" ]; then
    echo "**Failures:**"
    sed 's/^/- /' "$RUN/failures"
    echo
  fi
  # compare A B: the ratios of A against B alone (the per-system tables are
  # in the first report).
  compare() { "$SLOTBENCH" report -a "$1" -b "$2" "$JSONL" | sed -n '/^### .* vs /,/^### The issue/p' | sed '$d'; }
  if [ -s "$JSONL" ]; then "$SLOTBENCH" report -a slotmeta -b etcd+grpc "$JSONL"; else echo "(no results)"; fi
  if [ -s "$JSONL" ] && [ "$COMPARE_SMART" = 1 ]; then
    echo
    echo "Through the route-aware client (slotmeta+smart), against etcd through its own client and against the same workload sent to the nodes in turn:"
    echo
    "$SLOTBENCH" report -a slotmeta+smart -b etcd+grpc "$JSONL" | sed -n '/^### .* vs /,$p'
    compare slotmeta+smart slotmeta
  fi
  if [ -s "$JSONL" ] && [ "$COMPARE_GATEWAY" = 1 ]; then
    echo
    echo "etcd through its gRPC client against its HTTP/JSON gateway, and slotmeta against the gateway (the comparison before 2026-12-07):"
    echo
    compare etcd+grpc etcd
    compare slotmeta etcd
  fi
} >"$OUT"
echo
sed -n '/^### slotmeta vs etcd+grpc/,$p' "$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
[ ! -s "$RUN/failures" ] || { note "some runs failed: $(tr '\n' ';' <"$RUN/failures")"; exit 1; }
