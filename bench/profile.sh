#!/usr/bin/env bash
# bench/profile.sh — a CPU profile of slotmeta under load, without a pprof
# endpoint: cmd/slotbench/profile_test.go (build tag slotbenchprofile) starts 3
# nodes in one test process (real dragonboat + Pebble + the REST API on
# loopback HTTP), loads them with slotbench's own closed loop and profiles the
# load phase. The profile therefore holds all 3 servers AND the load generator
# (see the package breakdown); like the real cluster, everything shares 2 cores.
#
#   bench/profile.sh                     # kv-put c=64 for 10s
#   PROFILE_WORKLOAD=get-linearizable PROFILE_C=64 PROFILE_DURATION=10s PROFILE_GROUPS=8 bench/profile.sh
#   PROFILE_WORKLOAD=idle PROFILE_GROUPS=256 bench/profile.sh   # the settled cluster without load
#
# Writes BENCH_PROFILE_OUT (default bench/.run/profile-<date>)/{cpu.prof,heap.prof,slotbench.test,top.txt}
# and prints the summary. BENCH_SRC: the tree to build (default: this one).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
GO=${GO:-go}
SRC=${BENCH_SRC:-$ROOT}
OUTDIR=${BENCH_PROFILE_OUT:-$ROOT/bench/.run/profile-$(date -u +%Y-%m-%dT%H%M%SZ)}
WORKLOAD=${PROFILE_WORKLOAD:-kv-put}
CONC=${PROFILE_C:-64}
DURATION=${PROFILE_DURATION:-10s}
GROUPS_N=${PROFILE_GROUPS:-1}
WORKERS=${PROFILE_RAFT_WORKERS:-0}
mkdir -p "$OUTDIR"

(cd "$SRC" && "$GO" test -c -tags slotbenchprofile -o "$OUTDIR/slotbench.test" ./cmd/slotbench)
echo "workload $WORKLOAD c=$CONC for $DURATION, 3 in-process nodes ($GROUPS_N groups, RTT 100ms × 5); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
(cd "$OUTDIR" && SLOTBENCH_PROFILE_OUT="$OUTDIR/cpu.prof" SLOTBENCH_PROFILE_HEAP="$OUTDIR/heap.prof" SLOTBENCH_PROFILE_WORKLOAD=$WORKLOAD \
  SLOTBENCH_PROFILE_C=$CONC SLOTBENCH_PROFILE_DURATION=$DURATION SLOTBENCH_PROFILE_GROUPS=$GROUPS_N SLOTBENCH_PROFILE_RAFT_WORKERS=$WORKERS \
  SLOTBENCH_PROFILE_HEARTBEAT_RTT=${PROFILE_HEARTBEAT_RTT:-} SLOTBENCH_PROFILE_QUIESCE=${PROFILE_QUIESCE:-} \
  ./slotbench.test -test.run '^TestProfileInProcess$' -test.v -test.count=1 -test.timeout 10m 2>&1) |
  grep -Ev '^(=== RUN|preloaded|slotbench:)' | grep -v '^\s*$' || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -s "$OUTDIR/cpu.prof" ] || { echo "profile.sh: no profile written" >&2; exit 1; }

PPROF=("$GO" tool pprof -nodefraction=0 -edgefraction=0)
BIN=$OUTDIR/slotbench.test
PROF=$OUTDIR/cpu.prof
# Samples of the load generator carry the label slotbench=client (its workers
# and the HTTP client goroutines they start); everything else is the 3 nodes.
total_of() { "${PPROF[@]}" -top -nodecount=100000 "$@" "$BIN" "$PROF" 2>/dev/null | sed -n 's/.*accounting for \([^,]*\),.*/\1/p'; }
echo
echo "# CPU samples: $("${PPROF[@]}" -top -nodecount=1 "$BIN" "$PROF" 2>/dev/null | sed -n 's/.*\(Duration.*\)/\1/p'); load generator (slotbench=client) $(total_of -tagfocus=slotbench=client); servers $(total_of -tagignore=slotbench=client)"
"${PPROF[@]}" -top -nodecount=100000 -tagignore=slotbench=client "$BIN" "$PROF" >"$OUTDIR/top-servers.txt" 2>/dev/null
echo
echo "# server CPU by area (flat samples summed by package, load generator excluded)"
# Flat rows: flat flat% sum% cum cum% name; the package is the name up to the
# first '.' after its last '/'.
awk '
  /^ *[0-9.]+(s|ms|us|ns|h|m) / && NF >= 6 {
    v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    f = (u == "ms") ? v / 1000 : (u == "us") ? v / 1e6 : (u == "ns") ? v / 1e9 : (u == "m") ? v * 60 : v + 0
    name = $6; for (i = 7; i <= NF; i++) name = name " " $i
    p = name; sub(/\(.*/, "", p)
    n = split(p, seg, "/"); last = seg[n]; sub(/\..*/, "", last)
    pkg = ""; for (i = 1; i < n; i++) pkg = pkg seg[i] "/"; pkg = pkg last
    area = pkg
    if (pkg ~ /^github.com\/slotmeta\/slotmeta/) area = pkg
    else if (pkg ~ /^syscall$|^internal\/poll|^internal\/runtime\/syscall/) area = "syscalls (fsync, net I/O: see below)"
    else if (pkg ~ /lni\/dragonboat/) area = "dragonboat"
    else if (pkg ~ /cockroachdb\/pebble\/v2/) area = "pebble/v2 (FSM store)"
    else if (pkg ~ /cockroachdb\/pebble/) area = "pebble (dragonboat LogDB)"
    else if (pkg ~ /^runtime$|^internal\/runtime|^internal\/sync|^sync|^aeshash|^memeqbody|^cmpbody|^indexbyte/) area = "runtime, sync (scheduler, GC, maps, locks)"
    else if (pkg ~ /^net\/http|^net\/textproto|^bufio$|^net$|^net\/url$|^vendor\/golang.org\/x\/net/) area = "net/http + net"
    else if (pkg ~ /^encoding\/json|^reflect$|^strconv$|^unicode/) area = "encoding/json, reflect, strconv"
    total += f; by[area] += f
  }
  END { for (a in by) printf "%8.2fs %5.1f%%  %s\n", by[a], 100 * by[a] / total, a; printf "%8.2fs 100.0%%  total (servers)\n", total }
' "$OUTDIR/top-servers.txt" | sort -rn | head -n 25
echo
echo "# servers: where syscalls and the runtime go (cumulative; overlapping)"
"${PPROF[@]}" -top -cum -nodecount=100000 -tagignore=slotbench=client "$BIN" "$PROF" 2>/dev/null >"$OUTDIR/cum-servers.txt"
for f in 'syscall.Fdatasync' 'internal/poll.\(\*FD\).Write$' 'internal/poll.\(\*FD\).Read$' 'runtime.gcBgMarkWorker$' 'runtime.mallocgc$' 'runtime.schedule$' 'runtime.findRunnable$' \
  'encoding/json.Marshal$' 'encoding/json.\(\*Decoder\).Decode$' 'encoding/json.Unmarshal$' 'net/http.\(\*conn\).serve$' \
  'github.com/slotmeta/slotmeta/internal/engine/cluster.\(\*Node\).forward' 'github.com/slotmeta/slotmeta/internal/engine/cluster.\(\*peerClient\).callPath$' 'github.com/slotmeta/slotmeta/internal/engine/fsm.\(\*StateMachine\).Update$' \
  'dragonboat/v4.\(\*engine\).stepWorkerMain$' 'dragonboat/v4/internal/logdb.*SaveRaftState$' 'dragonboat/v4/internal/transport.*' 'go-playground/validator/v10.\(\*Validate\).Struct' 'prometheus.*'; do
  awk -v f="$f" '$6 ~ f { printf "%-72s %8s cum %7s\n", $6, $4, $5; exit }' "$OUTDIR/cum-servers.txt"
done
echo
echo "# servers: top 30 functions by flat CPU"
"${PPROF[@]}" -top -nodecount=30 -tagignore=slotbench=client "$BIN" "$PROF" 2>/dev/null | sed -n '/flat%/,$p'
echo
echo "# servers: top 45 by cumulative CPU"
"${PPROF[@]}" -top -cum -nodecount=45 -tagignore=slotbench=client "$BIN" "$PROF" 2>/dev/null | sed -n '/flat%/,$p'
echo
echo "profile: $PROF  (go tool pprof -http=127.0.0.1:0 $BIN $PROF)"
