# shellcheck shell=bash
# bench/lib.sh — shared by the bench/*.sh scripts (sourced, not run).
#
# Sets ROOT, GO, RUN (this run's directory under bench/.run), SRC (the tree that
# is built: the work tree, or a snapshot of HEAD with BENCH_SOURCE=head), COMMIT,
# SLOTBENCH (the load generator's binary), and offers:
#   machine_md              markdown lines about the machine, commit and load
#   slotmeta_up / slotmeta_down / slotmeta_pids / slotmeta_endpoints
#   load_now                uptime's load averages
#   begin_results / cleanup_on_exit  a run's results file, and its EXIT trap
# Everything listens on 127.0.0.1 only; only processes started here are stopped.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# The caller's settings, for the exact command in the report.
export USER_ENV # read by run.sh and compare-etcd.sh
USER_ENV=$(env | grep -E '^(BENCH_|COMPARE_|ETCD_QUOTA=|PROFILE_|GOMAXPROCS=|GOGC=|GOMEMLIMIT=)' | sort |
  sed -E 's/^([^=]*)=(.*)$/\1="\2"/' | tr '\n' ' ' || true)
GO=${GO:-go}
BENCH_SOURCE=${BENCH_SOURCE:-worktree}
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
RUN=${BENCH_RUN_DIR:-$ROOT/bench/.run/$STAMP-$$}
mkdir -p "$RUN" "$ROOT/bench/results"

note() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { note "$*"; exit 1; }

load_now() { cut -d' ' -f1-3 /proc/loadavg; }

# begin_results [NAME]: a run's record starts: the load average now
# (LOAD_START, read by machine_md) and OUT, its results file
# (bench/results/STAMP-COMMIT[-NAME].md).
# shellcheck disable=SC2120 # run.sh's file has no NAME
begin_results() {
  export LOAD_START
  LOAD_START=$(load_now)
  # shellcheck disable=SC2034 # the calling script writes it
  OUT=$ROOT/bench/results/$STAMP-$COMMIT$DIRTY${1:+-$1}.md
}

# cleanup_on_exit: slotmeta_cleanup runs however the script ends (an
# interrupt exits 130).
cleanup_on_exit() {
  trap slotmeta_cleanup EXIT
  trap 'exit 130' INT TERM
}

COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DIRTY=""
case $BENCH_SOURCE in
worktree)
  SRC=$ROOT
  if [ -n "$(git -C "$ROOT" status --porcelain 2>/dev/null)" ]; then
    DIRTY="-dirty"
  fi
  ;;
head)
  # A snapshot of the last commit (for when the work tree does not build),
  # plus this work tree's load generator.
  SRC=$RUN/src
  mkdir -p "$SRC"
  git -C "$ROOT" archive --format=tar HEAD | tar -x -C "$SRC"
  rm -rf "$SRC/cmd/slotbench"
  cp -r "$ROOT/cmd/slotbench" "$SRC/cmd/slotbench"
  ;;
*) die "BENCH_SOURCE=$BENCH_SOURCE: want worktree or head" ;;
esac

SLOTBENCH=$RUN/slotbench
(cd "$SRC" && "$GO" build -o "$SLOTBENCH" ./cmd/slotbench) || die "building cmd/slotbench failed"

machine_md() {
  local cpu mem
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
  mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
  echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "- commit: \`$COMMIT\`$([ -n "$DIRTY" ] && echo " with uncommitted changes in the work tree (built as they were)")$([ "$BENCH_SOURCE" = head ] && echo " (BENCH_SOURCE=head: a snapshot of HEAD was built, not the work tree)")"
  echo "- machine: $(nproc) CPUs (${cpu:-unknown}), $mem memory, kernel $(uname -r), $("$GO" version | cut -d' ' -f3-)"
  echo "- load average at the start: ${LOAD_START:-?} (1/5/15 min; the machine is shared with other builds)"
}

# ---- a slotmeta cluster of 3 nodes, through scripts/cluster.sh ---------------

SLOTMETA_UP=0
slotmeta_up() {
  local base
  base=$("$SLOTBENCH" freeport -offsets 0,1,2,1000,1001,1002,2000,2001,2002) || die "no free ports"
  export SLOTMETA_CLUSTER_DIR=$RUN/slotmeta SLOTMETA_BASE_PORT=$base
  export SLOTMETA_NODE_ARGS=${BENCH_NODE_ARGS:-}
  SLOTMETA_UP=1
  "$SRC/scripts/cluster.sh" up 3 >"$RUN/cluster-up.log" 2>&1 || {
    cat "$RUN/cluster-up.log" >&2
    die "scripts/cluster.sh up 3 failed (BENCH_SOURCE=head benchmarks the last commit if the work tree does not build)"
  }
  cat "$RUN/cluster-up.log"
}

slotmeta_down() {
  [ "$SLOTMETA_UP" = 1 ] || return 0
  SLOTMETA_UP=0
  "$SRC/scripts/cluster.sh" down || note "cluster.sh down failed; see $SLOTMETA_CLUSTER_DIR"
  rm -rf "$SLOTMETA_CLUSTER_DIR"/node*/data
}

# tidy_run: drop what is big and rebuildable from $RUN (the source snapshot,
# the server binary); logs, results and the profile stay.
tidy_run() {
  [ "$BENCH_SOURCE" != head ] || rm -rf "$RUN/src"
  rm -rf "$RUN/slotmeta/bin"
}

# slotmeta_cleanup: the EXIT trap of the scripts that start a cluster — stop it,
# tidy the run directory, keep the exit status.
slotmeta_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  slotmeta_down
  tidy_run
  exit "$rc"
}

slotmeta_pids() { cat "$SLOTMETA_CLUSTER_DIR"/node{1,2,3}/pid | paste -sd,; }

slotmeta_endpoints() {
  local b=$SLOTMETA_BASE_PORT
  echo "http://127.0.0.1:$b,http://127.0.0.1:$((b + 1)),http://127.0.0.1:$((b + 2))"
}

# ---- the workloads -----------------------------------------------------------

BENCH_DURATION=${BENCH_DURATION:-5s}
BENCH_WARMUP=${BENCH_WARMUP:-1s}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-5s}
BENCH_CONCURRENCY=${BENCH_CONCURRENCY:-1 16 64}
BENCH_KEYS=${BENCH_KEYS:-2000}
BENCH_IDLE=${BENCH_IDLE:-1s}
BENCH_SETTLE=${BENCH_SETTLE:-60s}
BENCH_SETTLE_CORES=${BENCH_SETTLE_CORES:-0.3}

# idle_cores PIDS SECONDS: cores the processes (comma-separated) use meanwhile.
idle_cores() {
  local a=0 b=0 p
  for p in ${1//,/ }; do a=$((a + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
  sleep "$2"
  for p in ${1//,/ }; do b=$((b + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
  awk -v d=$((b - a)) -v s="$2" 'BEGIN { printf "%.3f", d / 100 / s }'
}

# wait_idle PIDS: how long the processes stay busy (>= BENCH_SETTLE_CORES) on
# their own, measured in 2 s windows for at most BENCH_SETTLE; prints
# "SECONDS FIRST_WINDOW_CORES LAST_WINDOW_CORES".
wait_idle() {
  local start=$SECONDS limit first="" v
  limit=$(awk -v s="${BENCH_SETTLE%s}" 'BEGIN { printf "%d", s }')
  while :; do
    v=$(idle_cores "$1" 2)
    [ -n "$first" ] || first=$v
    if awk -v v="$v" -v t="$BENCH_SETTLE_CORES" 'BEGIN { exit !(v < t) }' || ((SECONDS - start >= limit)); then
      echo "$((SECONDS - start)) $first $v"
      return 0
    fi
  done
}

# bench_one TARGET ENDPOINTS PIDS JSONL WORKLOAD C PRELOAD: one slotbench run; a
# failure is noted in $RUN/failures and does not stop the caller.
bench_one() {
  local target=$1 eps=$2 pids=$3 out=$4 w=$5 c=$6 preload=$7 client=${8:-raw}
  echo "--- $target ($client client) $w c=$c (load $(load_now))"
  "$SLOTBENCH" -target "$target" -client "$client" -endpoints "$eps" -pids "$pids" -workload "$w" -c "$c" \
    -duration "$BENCH_DURATION" -warmup "$BENCH_WARMUP" -timeout "$BENCH_TIMEOUT" -idle "$BENCH_IDLE" \
    -settle "$BENCH_SETTLE" -settle-cores "$BENCH_SETTLE_CORES" -keys "$BENCH_KEYS" -key-prefix sbpre -preload="$preload" -json "$out" 2>&1 ||
    echo "FAILED: $target ($client client) $w c=$c" | tee -a "$RUN/failures"
}

is_read_workload() { case $1 in get-linearizable | get-local | mixed | batch-get) return 0 ;; esac; return 1; }

# run_workloads TARGET ENDPOINTS PIDS JSONL WORKLOAD…: every workload at every
# concurrency; the read keys are preloaded by the first read run only.
run_workloads() {
  local target=$1 eps=$2 pids=$3 out=$4 w c preload=true
  shift 4
  for w in "$@"; do
    for c in $BENCH_CONCURRENCY; do
      if is_read_workload "$w"; then
        bench_one "$target" "$eps" "$pids" "$out" "$w" "$c" "$preload"
        preload=false
      else
        bench_one "$target" "$eps" "$pids" "$out" "$w" "$c" false
      fi
    done
  done
}
