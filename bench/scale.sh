#!/usr/bin/env bash
# bench/scale.sh (make scale) — scale-out shown on one machine: slotmeta nodes
# as processes on network-namespace hosts of their own, each capped at
# SCALE_CPU cores (cgroup v1 cpu quota), loaded from outside the caps by
# slotbench's closed loop (cmd/slotbench/scale_test.go, build tag
# slotbenchscale): 3 nodes (3 groups) → 3 more join and the balancer settles
# (6 groups) → the 3 new nodes are drained and removed (3 groups again), each
# phase measured with kv-put and get-linearizable, spread over the nodes and
# sent where the routes say. Writes bench/results/<date>-<commit>-scale.md.
#
#   make scale
#   SCALE_CPU=0.3 SCALE_C=64 SCALE_DURATION=10s bench/scale.sh
#
# Needs root, iproute2 (installed with apt-get when missing) and a cgroup v1
# cpu controller; the hosts, links and cgroups it makes are removed at the end.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
GO=${GO:-go}
CPU=${SCALE_CPU:-0.25}
CONC=${SCALE_C:-64}
DURATION=${SCALE_DURATION:-10s}
[ "$(id -u)" = 0 ] || { echo "scale.sh: needs root (network namespaces, cgroups)" >&2; exit 1; }
if ! command -v ip >/dev/null 2>&1; then
  echo "scale.sh: installing iproute2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q iproute2 >/dev/null
fi
[ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] || { echo "scale.sh: no cgroup v1 cpu controller at /sys/fs/cgroup/cpu" >&2; exit 1; }

STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
COMMIT=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
DIRTY=""
[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] && DIRTY="-dirty"
RUN=$ROOT/bench/.run/scale-$STAMP
OUT=$ROOT/bench/results/$STAMP-$COMMIT$DIRTY-scale.md
mkdir -p "$RUN" "$ROOT/bench/results"

(cd "$ROOT" && CGO_ENABLED=0 "$GO" build -o "$RUN/slotmeta" ./cmd/server)
(cd "$ROOT" && "$GO" test -c -tags slotbenchscale -o "$RUN/scale.test" ./cmd/slotbench)
echo "scale.sh: nodes capped at $CPU cores, c=$CONC, $DURATION a measurement; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$RUN" && SLOTBENCH_SCALE_BIN="$RUN/slotmeta" SLOTBENCH_SCALE_CPU=$CPU SLOTBENCH_SCALE_C=$CONC \
  SLOTBENCH_SCALE_DURATION=$DURATION SLOTBENCH_SCALE_OUT="$RUN/table.md" \
  ./scale.test -test.run '^TestScaleOut$' -test.v -test.count=1 -test.timeout 60m 2>&1 | tee "$RUN/log") |
  grep -E '^\s+scale_test.go|^(---|FAIL|PASS|ok)' || true
[ -s "$RUN/table.md" ] || { echo "scale.sh: no result (log: $RUN/log)" >&2; exit 1; }
{
  echo "# make scale — $STAMP"
  echo
  echo "- command: \`SCALE_CPU=$CPU SCALE_C=$CONC SCALE_DURATION=$DURATION bench/scale.sh\`"
  echo "- commit: \`$COMMIT\`$([ -n "$DIRTY" ] && echo " with uncommitted changes in the work tree")"
  echo "- machine: $(nproc) cores, load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  cat "$RUN/table.md"
} >"$OUT"
echo "scale.sh: wrote $OUT"
