#!/usr/bin/env bash
# bench/backup-restore.sh — a backup and a restore of a filled store (issue
# 29): a 3-node cluster (scripts/cluster.sh, loopback, one group) filled with
# BR_STORE_MB of 64 KiB values (the store is about twice the values: the change
# log keeps each put's value), then kv-put c=16 before, during and after
# `slotmeta ctl backup start --wait` on node 1; the cluster stops, and the
# backup is restored into three new data directories (`slotmeta restore`, one
# node after the other, timed), the nodes started and timed to /readyz, the
# restored values read (get-linearizable) and new ones written (kv-put).
# Writes bench/results/<date>-<commit>-backup-restore.md.
#
#   bench/backup-restore.sh                     # 1024 MiB of values
#   BR_STORE_MB=128 bench/backup-restore.sh     # a quick one
#
# Environment (defaults in brackets): BR_STORE_MB [1024], BR_DURATION [10s]
# of each kv-put run, BENCH_NODE_ARGS.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STORE_MB=${BR_STORE_MB:-1024}
DURATION=${BR_DURATION:-10s}
VALUE=65536
KEYS=$((STORE_MB * 1048576 / VALUE))
begin_results backup-restore
COMMAND="${USER_ENV}bench/backup-restore.sh"
export BENCH_NODE_ARGS="${BENCH_NODE_ARGS:-} --groups 1 --balancer=false"

RESTORED=()
cleanup() {
  local rc=$? pid
  for pid in "${RESTORED[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${RESTORED[@]}"; do while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done; done
  rm -rf "$RUN/restored" "$RUN/backup"
  trap - EXIT
  (exit "$rc")
  slotmeta_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

slotmeta_up
EPS=$(slotmeta_endpoints)
BIN=$SLOTMETA_CLUSTER_DIR/bin/slotmeta
secs() { date +%s.%N; }
since() { echo "$(secs) - $1" | bc | xargs printf '%.1f'; }
put() { "$SLOTBENCH" -endpoints "$1" -workload kv-put -c 16 -duration "$DURATION" -warmup 1s 2>&1 | grep -E ' ops/s' | sed -E 's/.*: ([0-9]+) ops\/s.*p99 ([0-9.]+ ms).*/\1 ops\/s, p99 \2/'; }

note "filling the store: $KEYS values of 64 KiB"
t=$(secs)
"$SLOTBENCH" -endpoints "$EPS" -workload get-local -keys "$KEYS" -value-size $VALUE -key-prefix big -preload-c 16 -duration 1s -warmup 0s >"$RUN/fill.log" 2>&1
FILL=$(since "$t")
STORE=$(du -sh "$SLOTMETA_CLUSTER_DIR/node1/data/store" | cut -f1)
# The fill leaves compactions behind: the writers' baseline waits for them
# (BENCH_SETTLE, 60 s at most, until the nodes use < BENCH_SETTLE_CORES).
read -r SETTLED _ _ < <(wait_idle "$(slotmeta_pids)")
BEFORE=$(put "$EPS")
t=$(secs)
"$BIN" ctl --endpoints "$EPS" --timeout 30m -o json backup start --wait >"$RUN/backup.json" 2>&1 &
bk=$!
sleep 0.5
DURING=$(put "$EPS")
wait "$bk"
BACKUP_S=$(since "$t")
AFTER=$(put "$EPS")
read -r ID DIR BYTES < <(python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); print(b["id"], b["dir"], b["bytes"])' "$RUN/backup.json")
case $DIR in /*) ;; *) DIR=$SLOTMETA_CLUSTER_DIR/node1/$DIR ;; esac
[ -f "$DIR/manifest.json" ] || DIR=$SLOTMETA_CLUSTER_DIR/node1/data/backups/$ID
mv "$DIR" "$RUN/backup"
slotmeta_down

base=$("$SLOTBENCH" freeport -offsets 0,1,2,1000,1001,1002,2000,2001,2002) || die "no free ports"
members="1=127.0.0.1:$((base + 1000))/127.0.0.1:$base/127.0.0.1:$((base + 2000))"
members+=",2=127.0.0.1:$((base + 1001))/127.0.0.1:$((base + 1))/127.0.0.1:$((base + 2001))"
members+=",3=127.0.0.1:$((base + 1002))/127.0.0.1:$((base + 2))/127.0.0.1:$((base + 2002))"
node_args() { echo "--node-id $1 --data-dir $RUN/restored/node$1 --api-addr 127.0.0.1:$((base + $1 - 1)) --raft-addr 127.0.0.1:$((base + 999 + $1)) --peer-addr 127.0.0.1:$((base + 1999 + $1)) --initial-members $members"; }
LAYOUT=()
for i in 1 2 3; do
  t=$(secs)
  # shellcheck disable=SC2046 # the flags split on purpose
  "$BIN" restore --from "$RUN/backup" $(node_args $i) >>"$RUN/restore.log" 2>&1 || { cat "$RUN/restore.log" >&2; die "restore of node $i failed"; }
  LAYOUT+=("$(since "$t")")
done
LAID=$(du -sh "$RUN/restored/node1" | cut -f1)
t=$(secs)
for i in 1 2 3; do
  # shellcheck disable=SC2046
  "$BIN" $(node_args $i) --log-level warn >"$RUN/restored-node$i.log" 2>&1 &
  RESTORED+=($!)
done
for i in 0 1 2; do
  until curl -sf -o /dev/null "http://127.0.0.1:$((base + i))/readyz"; do
    kill -0 "${RESTORED[$i]}" 2>/dev/null || die "restored node $((i + 1)) exited: $(tail -n 5 "$RUN/restored-node$((i + 1)).log")"
    sleep 0.05
  done
done
READY=$(since "$t")
REPS="http://127.0.0.1:$base,http://127.0.0.1:$((base + 1)),http://127.0.0.1:$((base + 2))"
READS=$("$SLOTBENCH" -endpoints "$REPS" -workload get-linearizable -keys "$KEYS" -key-prefix big -preload=false -c 16 -duration "$DURATION" -warmup 1s 2>&1 |
  grep -E ' ops/s' | sed -E 's/.*: ([0-9]+) ops\/s \(([0-9]+) ok, ([0-9]+) errors.*/\1 ops\/s, \3 errors/')
WRITES=$(put "$REPS")

{
  echo "# A backup and a restore of a filled store"
  echo
  machine_md
  echo "- command: \`$COMMAND\`"
  echo
  echo "| | result |"
  echo "| --- | --- |"
  echo "| filled | $KEYS values of 64 KiB in ${FILL} s; node 1's store $STORE; settled ${SETTLED} s |"
  echo "| kv-put c=16 before / during / after the backup | $BEFORE / $DURING / $AFTER |"
  echo "| backup under kv-put | $BYTES bytes in ${BACKUP_S} s |"
  echo "| \`slotmeta restore\` per node (one after the other) | ${LAYOUT[0]} / ${LAYOUT[1]} / ${LAYOUT[2]} s; a restored data directory $LAID |"
  echo "| the restored nodes started → all ready | ${READY} s |"
  echo "| get-linearizable c=16 of the restored values | $READS |"
  echo "| kv-put c=16 on the restored cluster | $WRITES |"
} | tee "$OUT"
note "results in $OUT"
