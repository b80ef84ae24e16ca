#!/usr/bin/env bash
# bench/idle.sh — what idle groups cost per node, A/B in one run: for each
# configuration, a 3-node cluster with IDLE_GROUPS groups (scripts/cluster.sh,
# loopback) is started, left to settle and rest (idle groups quiesce after ten
# election timeouts without traffic), and the CPU of its 3 processes is
# measured over BENCH_GROUPS_IDLE; the configurations take turns for
# IDLE_ROUNDS rounds (A B A B …), so that a noisy minute of the machine falls
# on both, and the report gives each one's median and every round.
#
#   bench/idle.sh
#   IDLE_CONFIGS='default|;tick 100ms|--rtt 100ms --election-rtt 5' bench/idle.sh
#
# Environment (defaults in brackets), besides bench/lib.sh's BENCH_*:
#   IDLE_CONFIGS ['default|;tick 100ms|--rtt 100ms --election-rtt 5']
#                 configurations separated by ';', each "label|server flags"; a
#                 third field "|{json}" runs the nodes in a directory holding it as
#                 dragonboat-soft-settings.json (dragonboat reads it from the working
#                 directory at start), e.g. '{"NodeReloadMillisecond":1000}'; a
#                 fourth field "|PATH" runs that server binary instead of one built
#                 from this tree (an A/B of two commits: build each with
#                 `go build -o PATH ./cmd/server` in a worktree of it)
#   IDLE_GROUPS [256]             groups of every cluster
#   IDLE_ROUNDS [3]               rounds of all configurations
#   BENCH_GROUPS_IDLE [10]        seconds measured
#   BENCH_GROUPS_REST [10]        seconds at rest before, after the cluster settled
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IFS=';' read -r -a CONFIGS <<<"${IDLE_CONFIGS:-default|;tick 100ms|--rtt 100ms --election-rtt 5}"
GROUPS_N=${IDLE_GROUPS:-256}
ROUNDS=${IDLE_ROUNDS:-3}
IDLE_S=${BENCH_GROUPS_IDLE:-10}
REST_S=${BENCH_GROUPS_REST:-10}
begin_results idle
COMMAND="${USER_ENV}$(env | grep -E '^IDLE_' | sort | sed -E 's/^([^=]*)=(.*)$/\1="\2"/' | tr '\n' ' ')bench/idle.sh"
cleanup_on_exit

: >"$RUN/idle.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for i in "${!CONFIGS[@]}"; do
    IFS='|' read -r label args soft bin <<<"${CONFIGS[$i]}"
    echo "=== round $round: $label ($GROUPS_N groups, flags '${args}'${soft:+, soft settings $soft}${bin:+, binary $bin}; load $(load_now))"
    [ -z "$bin" ] || [ -x "$bin" ] || die "configuration $label: $bin is not an executable"
    [ -z "$bin" ] || bin=$(realpath "$bin") # the cluster starts from another directory
    export SLOTMETA_SERVER_BIN=$bin # scripts/cluster.sh runs it instead of building ('': builds)
    export BENCH_NODE_ARGS="$args --groups $GROUPS_N"
    cwd=$RUN/cwd-$i
    mkdir -p "$cwd"
    if [ -n "$soft" ]; then printf '%s\n' "$soft" >"$cwd/dragonboat-soft-settings.json"; fi
    pushd "$cwd" >/dev/null
    slotmeta_up
    popd >/dev/null
    PIDS=$(slotmeta_pids)
    read -r settle_s _ _ < <(wait_idle "$PIDS")
    sleep "$REST_S"
    idle=$(idle_cores "$PIDS" "$IDLE_S")
    echo "settled after ${settle_s}s; idle: $idle cores for 3 nodes"
    printf '%s\t%s\t%s\t%s\n' "$i" "$round" "$settle_s" "$idle" >>"$RUN/idle.tsv"
    slotmeta_down
    rm -rf "$SLOTMETA_CLUSTER_DIR"
  done
done
LOAD_END=$(load_now)

{
  echo "# slotmeta idle CPU per node, A/B, $STAMP, commit $COMMIT$DIRTY"
  echo
  echo "Command: \`$COMMAND\`; run directory \`${RUN#"$ROOT"/}\`."
  echo
  machine_md
  echo "- load average at the end: $LOAD_END"
  echo "- cluster: 3 nodes on 127.0.0.1 (\`scripts/cluster.sh up 3\`), $GROUPS_N groups, measured ${IDLE_S} s from ${REST_S} s after it settled; configurations in turn, $ROUNDS rounds"
  echo
  echo "| configuration | server flags | soft settings | median per node (% of a core) | rounds (% per node) |"
  echo "| --- | --- | --- | --: | --- |"
  for i in "${!CONFIGS[@]}"; do
    IFS='|' read -r label args soft bin <<<"${CONFIGS[$i]}"
    [ -z "$bin" ] || soft="${soft:+$soft, }binary ${bin##*/}"
    awk -F'\t' -v i="$i" -v label="$label" -v args="${args:-defaults}" -v soft="${soft:--}" '
      $1 == i { v[n++] = $4 / 3 * 100 }
      END {
        for (a = 0; a < n; a++) for (b = a + 1; b < n; b++) if (v[b] < v[a]) { t = v[a]; v[a] = v[b]; v[b] = t }
        med = (n % 2) ? v[int(n / 2)] : (v[n / 2 - 1] + v[n / 2]) / 2
        rounds = ""; for (a = 0; a < n; a++) rounds = rounds (a ? ", " : "") sprintf("%.1f", v[a])
        printf "| %s | `%s` | `%s` | %.1f %% | %s (sorted) |\n", label, args, soft, med, rounds
      }' "$RUN/idle.tsv"
  done
} >"$OUT"
echo "=== wrote ${OUT#"$ROOT"/}"
cat "$OUT"
