#!/usr/bin/env bash
# cluster.sh — a local multi-node slotmeta cluster on 127.0.0.1.
#
#   cluster.sh up [N]     build the server, start N founding nodes (default 3), wait for /readyz
#   cluster.sh status     each node's process and /readyz, the cluster, each group's leader;
#                         exits 1 unless every node runs and is ready and every group has a leader
#   cluster.sh kill I     SIGKILL node I
#   cluster.sh start I    start node I again with its saved arguments, wait for /readyz
#   cluster.sh join I     start a new node I (> N) that joins through node 1
#   cluster.sh upgrade BINARY I…  a rolling upgrade (or rollback): for each node in turn, stop it
#                         (SIGTERM), start it on BINARY with the same arguments and data, wait for /readyz
#   cluster.sh logs I [-f] the tail of node I's log (-f: follow it)
#   cluster.sh down       stop every node this script started (SIGTERM, SIGKILL after 15 s)
#
# Environment:
#   SLOTMETA_CLUSTER_DIR  cluster directory (default: .cluster in the repository root)
#   SLOTMETA_BASE_PORT    node i listens on API BASE+i-1, Raft BASE+1000+i-1,
#                         peer BASE+2000+i-1 (default 8081)
#   SLOTMETA_NODE_ARGS    extra server flags for every node, word-split (e.g. "--rtt 20ms --groups 8")
#   SLOTMETA_CLUSTER_JSON JSON reader for `status`: jq, python3 or awk (default: the first found)
#   SLOTMETA_SERVER_BIN   run this server binary instead of building one from the tree
#
# Layout: $DIR/bin/slotmeta, $DIR/secret (mode 600), $DIR/members (the founding
# --initial-members), $DIR/node$i/{data,log,pid,args}, and $DIR/node$i/slotmeta once
# upgrade gave node i a binary of its own. A node's configuration is
# exactly its args file (one argument a line) plus the cluster secret, which it
# reads from SLOTMETA_CLUSTER_SECRET so that it never shows in ps or in args.
# Every other SLOTMETA_* variable of the caller is kept away from the nodes.
#
# Only processes whose pid file this script wrote, and whose /proc/PID/cmdline
# is $DIR/bin/slotmeta (or the node's own binary) with this node's data dir,
# are ever signalled.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
DIR=${SLOTMETA_CLUSTER_DIR:-$ROOT/.cluster}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
[ -d "$DIR" ] && DIR=$(cd "$DIR" && pwd -P)
BASE=${SLOTMETA_BASE_PORT:-8081}
BIN=$DIR/bin/slotmeta
HOST=127.0.0.1
READY_TIMEOUT=60 # seconds, for every wait on /readyz
STOP_TIMEOUT=15  # seconds between SIGTERM and SIGKILL

usage() {
  cat <<'EOF'
usage: scripts/cluster.sh COMMAND
  up [N]        build the server and start N founding nodes (default 3)
  status        processes, /readyz, the cluster and each group's leader
                (exit 1 unless every node is ready and every group has a leader)
  kill I        SIGKILL node I
  start I       start node I again (same arguments and data), wait for /readyz
  join I        start a new node I that joins the cluster through node 1
  upgrade BINARY I…
                one node at a time: stop it (SIGTERM), start it on BINARY (same
                arguments and data), wait for /readyz — a rolling upgrade, or a
                rollback with the previous binary (docs/runbook.md)
  logs I [-f]   tail node I's log
  down          stop every node started here
  help          this text
env: SLOTMETA_CLUSTER_DIR (./.cluster), SLOTMETA_BASE_PORT (8081), SLOTMETA_NODE_ARGS, SLOTMETA_SERVER_BIN
ports of node i: API BASE+i-1, Raft BASE+1000+i-1, peer BASE+2000+i-1 (127.0.0.1 only)
EOF
}

die() { printf 'cluster.sh: %s\n' "$*" >&2; exit 1; }
note() { printf 'cluster.sh: %s\n' "$*" >&2; }

[[ $BASE =~ ^[1-9][0-9]*$ ]] || die "SLOTMETA_BASE_PORT=$BASE is not a port number"

TMP=$(mktemp)
trap 'rm -f "$TMP" "$TMP.routes"' EXIT

# ---- nodes ---------------------------------------------------------------

node_dir() { printf '%s/node%s' "$DIR" "$1"; }
api_port() { echo $((BASE + $1 - 1)); }
raft_port() { echo $((BASE + 1000 + $1 - 1)); }
peer_port() { echo $((BASE + 2000 + $1 - 1)); }
api_url() { printf 'http://%s:%s' "$HOST" "$(api_port "$1")"; }

# node_id ARG: ARG if it is a node number, else exit 2.
node_id() {
  [[ ${1:-} =~ ^[1-9][0-9]{0,3}$ ]] || { note "want a node number, got '${1:-}'"; usage >&2; exit 2; }
  (($(peer_port "$1") <= 65535)) || die "node $1's peer port $(peer_port "$1") is above 65535"
  echo "$1"
}

# nodes: the ids of every node that has an args file, ascending.
nodes() {
  local f n
  for f in "$DIR"/node*/args; do
    [ -e "$f" ] || continue
    n=${f%/args}
    n=${n##*/node}
    [[ $n =~ ^[0-9]+$ ]] && echo "$n"
  done | sort -n
}

# pid_of I: the pid in node I's pid file, or nothing.
pid_of() {
  local f pid
  f=$(node_dir "$1")/pid
  [ -f "$f" ] || return 0
  { read -r pid <"$f"; } 2>/dev/null || return 0
  [[ $pid =~ ^[1-9][0-9]*$ ]] && echo "$pid"
  return 0
}

# node_bin I: the binary node I runs: its own once upgrade gave it one, else $BIN.
node_bin() {
  if [ -x "$(node_dir "$1")/slotmeta" ]; then
    printf '%s' "$(node_dir "$1")/slotmeta"
  else
    printf '%s' "$BIN"
  fi
}

# ours I PID: PID is a live (not zombie) process running node I's binary for node I.
ours() {
  local i=$1 pid=$2 stat state arg
  local -a argv=()
  [[ $pid =~ ^[1-9][0-9]*$ ]] || return 1
  { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || return 1
  state=${stat##*) }
  state=${state%% *}
  case $state in Z | X | x) return 1 ;; esac
  { mapfile -d '' -t argv <"/proc/$pid/cmdline"; } 2>/dev/null || return 1
  [ "${#argv[@]}" -gt 0 ] && { [ "${argv[0]}" = "$BIN" ] || [ "${argv[0]}" = "$(node_dir "$i")/slotmeta" ]; } || return 1
  for arg in "${argv[@]}"; do
    [ "$arg" = "$(node_dir "$i")/data" ] && return 0
  done
  return 1
}

# running I: node I's process is up; prints its pid.
running() {
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] && ours "$1" "$pid" && echo "$pid"
}

# gone PID: no such process any more (a zombie counts as gone).
gone() {
  local stat state
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
  state=${stat##*) }
  state=${state%% *}
  case $state in Z | X | x) return 0 ;; esac
  return 1
}

# http METHOD URL: prints the status code (000 if nothing answered); the body goes to $TMP.
# SLOTMETA_TOKEN, when set, is sent as a bearer token (status reads /v1/cluster).
http() {
  local code
  local -a args=(-q -s --noproxy '*' --max-time 5 -X "$1" -o "$TMP" -w '%{http_code}')
  [ -n "${SLOTMETA_TOKEN:-}" ] && args+=(-H "Authorization: Bearer $SLOTMETA_TOKEN")
  code=$(curl "${args[@]}" "$2") || code=000
  echo "$code"
}

ready() { [ "$(http GET "$(api_url "$1")/readyz")" = 200 ]; }

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

build() {
  mkdir -p "$DIR/bin"
  if [ -n "${SLOTMETA_SERVER_BIN:-}" ]; then # a binary built elsewhere (bench/idle.sh's A/B of commits)
    echo "using $SLOTMETA_SERVER_BIN"
    cp "$SLOTMETA_SERVER_BIN" "$BIN" || die "cannot copy $SLOTMETA_SERVER_BIN"
    return
  fi
  echo "building $BIN"
  # Pure Go, like make build (no glibc arenas under Pebble's memory).
  (cd "$ROOT" && CGO_ENABLED=${CGO_ENABLED:-0} go build -o "$BIN" ./cmd/server) || die "go build failed"
}

# secret: the cluster secret, made once per cluster dir.
secret() {
  local f=$DIR/secret
  if [ ! -s "$f" ]; then
    (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$f")
  fi
  chmod 600 "$f"
  cat "$f"
}

# launch I: start node I from its args file, in the background.
launch() {
  local i=$1 d v p secret
  local -a argv=() clean=()
  d=$(node_dir "$i")
  mapfile -t argv <"$d/args"
  for p in "$(api_port "$i")" "$(raft_port "$i")" "$(peer_port "$i")"; do
    ! port_in_use "$p" || die "node $i: port $p on $HOST is already in use"
  done
  [ -x "$BIN" ] || build
  secret=$(secret)
  while IFS= read -r v; do
    [[ $v == SLOTMETA_* ]] && clean+=(-u "$v")
  done < <(compgen -e)
  mkdir -p "$d/data"
  printf '=== %s cluster.sh: starting node %s\n' "$(date '+%F %T')" "$i" >>"$d/log"
  env "${clean[@]}" SLOTMETA_CLUSTER_SECRET="$secret" \
    nohup "$(node_bin "$i")" "${argv[@]}" </dev/null >>"$d/log" 2>&1 &
  echo $! >"$d/pid"
}

# save_args I ARG…: node I's argv, for launch and later starts.
save_args() {
  local i=$1 d extra
  local -a more=()
  shift
  d=$(node_dir "$i")
  mkdir -p "$d"
  extra=${SLOTMETA_NODE_ARGS:-}
  read -r -a more <<<"$extra"
  # The extra flags go first so that the addresses and ids below win.
  printf '%s\n' "${more[@]}" "$@" >"$d/args"
}

base_args() {
  printf '%s\n' --node-id "$1" --data-dir "$(node_dir "$1")/data" \
    --api-addr "$HOST:$(api_port "$1")" --raft-addr "$HOST:$(raft_port "$1")" \
    --peer-addr "$HOST:$(peer_port "$1")"
}

# wait_ready I…: every node answers /readyz 200, or exit 1 with the failing node's log.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT)) i
  for i in "$@"; do
    until ready "$i"; do
      if [ -z "$(running "$i")" ]; then
        note "node $i exited; the end of $(node_dir "$i")/log:"
        tail -n 30 "$(node_dir "$i")/log" >&2 || true
        exit 1
      fi
      if ((SECONDS >= deadline)); then
        note "node $i not ready after ${READY_TIMEOUT}s ($(http GET "$(api_url "$i")/readyz") $(head -c 300 "$TMP")); the end of $(node_dir "$i")/log:"
        tail -n 30 "$(node_dir "$i")/log" >&2 || true
        note "the nodes are still running: see scripts/cluster.sh status, or stop them with scripts/cluster.sh down"
        exit 1
      fi
      sleep 0.2
    done
  done
}

table() {
  local i
  printf '%-5s %-24s %-32s %s\n' NODE API CONSOLE PID
  for i in "$@"; do
    printf '%-5s %-24s %-32s %s\n' "$i" "$(api_url "$i")" "$(api_url "$i")/console" "$(pid_of "$i")"
  done
}

# stop SIGNAL I…: signal the named nodes, wait for them to exit (SIGKILL after
# STOP_TIMEOUT when SIGNAL is TERM), remove their pid files.
stop() {
  local sig=$1 i pid deadline left
  shift
  local -a ids=() pids=()
  for i in "$@"; do
    pid=$(pid_of "$i")
    if [ -n "$pid" ] && ours "$i" "$pid"; then
      kill "-$sig" "$pid" 2>/dev/null || true
      ids+=("$i")
      pids+=("$pid")
      echo "node $i: SIG$sig sent to $pid"
    elif [ -e "$(node_dir "$i")/pid" ]; then
      echo "node $i: not running (stale pid file removed)"
      rm -f "$(node_dir "$i")/pid"
    fi
  done
  deadline=$((SECONDS + STOP_TIMEOUT))
  while :; do
    left=0
    for pid in "${pids[@]}"; do gone "$pid" || left=$((left + 1)); done
    ((left == 0)) && break
    if ((SECONDS >= deadline)); then
      if [ "$sig" = KILL ]; then
        note "$left node(s) did not exit after SIGKILL; giving up (pid files kept)"
        return 1
      fi
      for i in "${!ids[@]}"; do
        if ours "${ids[$i]}" "${pids[$i]}"; then
          note "node ${ids[$i]}: still running after ${STOP_TIMEOUT}s; SIGKILL"
          kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
      done
      deadline=$((SECONDS + 5))
      sig=KILL
    fi
    sleep 0.1
  done
  for i in "${ids[@]}"; do
    rm -f "$(node_dir "$i")/pid"
    echo "node $i: stopped"
  done
}

# ---- JSON ----------------------------------------------------------------

json_tool() {
  local t=${SLOTMETA_CLUSTER_JSON:-}
  if [ -z "$t" ]; then
    for t in jq python3 awk; do command -v "$t" >/dev/null 2>&1 && break; done
  fi
  case $t in jq | python3 | awk) ;; *) die "SLOTMETA_CLUSTER_JSON=$t: want jq, python3 or awk" ;; esac
  command -v "$t" >/dev/null 2>&1 || die "$t is not installed"
  echo "$t"
}

# cluster_summary <JSON: one "key: value" line per top-level field; arrays
# as their length.
cluster_summary() {
  case $(json_tool) in
  jq) jq -r 'to_entries[] | "\(.key): \(.value | if type == "array" then "\(length) entries" elif type == "object" then tojson else tostring end)"' ;;
  python3) python3 -c '
import json, sys
for k, v in json.load(sys.stdin).items():
    if isinstance(v, list): v = "%d entries" % len(v)
    elif isinstance(v, (dict, bool)) or v is None: v = json.dumps(v)
    print("%s: %s" % (k, v))' ;;
  awk)
    # A flat object: one pair a line; anything nested: the raw document.
    awk '{ s = s $0 }
      END {
        sub(/^[ \t]*\{/, "", s); sub(/\}[ \t]*$/, "", s)
        if (index(s, "{") || index(s, "[")) { print "{" s "}"; exit }
        n = split(s, kv, /,"/)
        for (i = 1; i <= n; i++) {
          k = kv[i]; sub(/^"/, "", k); v = k
          sub(/".*/, "", k); sub(/^[^"]*":/, "", v)
          print k ": " v
        }
      }'
    ;;
  esac
}

# routes_summary <JSON: "revision R", then "GROUP LEADER TERM SLOTS" a group
# (LEADER and TERM 0 when no leader is known).
routes_summary() {
  case $(json_tool) in
  jq) jq -r '"revision \(.revision)", (.hash_slots | group_by(.group)[] | "\(.[0].group) \(.[0].leader_node // 0) \(.[0].leader_term // 0) \(length)")' ;;
  python3) python3 -c '
import json, sys
d = json.load(sys.stdin)
print("revision %d" % d["revision"])
g = {}
for r in d["hash_slots"]:
    e = g.setdefault(r["group"], [r.get("leader_node", 0), r.get("leader_term", 0), 0])
    e[2] += 1
for k in sorted(g): print(k, *g[k])' ;;
  awk)
    # The server writes compact JSON: every route is a flat {…} object.
    awk 'BEGIN { RS = "}" }
      function num(rec, key,   s) {
        if (!match(rec, "\"" key "\":[0-9]+")) return 0
        s = substr(rec, RSTART, RLENGTH); sub(/.*:/, "", s); return s + 0
      }
      NR == 1 { print "revision " num($0, "revision") }
      /"group":/ { g = num($0, "group"); n[g]++
        if (!(g in l)) { l[g] = num($0, "leader_node"); t[g] = num($0, "leader_term") } }
      END { for (g in n) print g, l[g], t[g], n[g] }' | sort -k1,1 -n
    ;;
  esac
}

# ---- commands ------------------------------------------------------------

cmd_up() {
  local n=${1:-3} i members="" pid
  local -a ids=() argv=() existing=()
  [[ $n =~ ^[1-9][0-9]?$ ]] || { note "up: want a node count, got '$n'"; exit 2; }
  node_id "$n" >/dev/null
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd -P)
  BIN=$DIR/bin/slotmeta
  mapfile -t existing < <(nodes)
  for i in "${existing[@]}"; do
    pid=$(running "$i") && die "node $i is running (pid $pid) in $DIR; scripts/cluster.sh down first"
  done
  for ((i = 1; i <= n; i++)); do
    members+="${members:+,}$i=$HOST:$(raft_port "$i")/$HOST:$(api_port "$i")/$HOST:$(peer_port "$i")"
  done
  if [ -s "$DIR/members" ] && [ "$(<"$DIR/members")" != "$members" ]; then
    die "$DIR was founded as $(<"$DIR/members"); use the same node count and SLOTMETA_BASE_PORT, or another SLOTMETA_CLUSTER_DIR"
  fi
  for ((i = 1; i <= n; i++)); do
    for pid in "$(api_port "$i")" "$(raft_port "$i")" "$(peer_port "$i")"; do
      ! port_in_use "$pid" || die "port $pid on $HOST is already in use (another cluster? set SLOTMETA_BASE_PORT)"
    done
  done
  build
  echo "$members" >"$DIR/members"
  for ((i = 1; i <= n; i++)); do
    mapfile -t argv < <(base_args "$i")
    save_args "$i" "${argv[@]}" --initial-members "$members"
    launch "$i"
    ids+=("$i")
  done
  echo "waiting for $n nodes to answer /readyz (logs in $DIR/node*/log)"
  wait_ready "${ids[@]}"
  table "${ids[@]}"
  for i in "${existing[@]}"; do
    ((i <= n)) || [ -n "$(running "$i")" ] || echo "node $i (joined) is not running: scripts/cluster.sh start $i"
  done
}

cmd_down() {
  local -a ids=()
  [ -d "$DIR" ] || { echo "no cluster in $DIR"; return 0; }
  mapfile -t ids < <(nodes)
  [ "${#ids[@]}" -gt 0 ] || { echo "no nodes in $DIR"; return 0; }
  [ -n "$(find "$DIR" -mindepth 2 -maxdepth 2 -name pid)" ] || { echo "no node is running"; return 0; }
  stop TERM "${ids[@]}"
}

cmd_status() {
  local i pid state code why first="" rc=0 group leader term slots
  if [ ! -d "$DIR" ] || [ -z "$(nodes)" ]; then
    die "no cluster in $DIR; scripts/cluster.sh up first"
  fi
  printf '%-5s %-24s %-9s %-8s %s\n' NODE API PROCESS PID READYZ
  for i in $(nodes); do
    if pid=$(running "$i"); then
      state=running
      code=$(http GET "$(api_url "$i")/readyz")
      why=""
      if [ "$code" != 200 ]; then
        rc=1
        why=$(sed -n 's/.*"message":"\([^"]*\)".*/\1/p' "$TMP")
        why=${why:0:100}
      fi
      [ -n "$first" ] || first=$i
    else
      state=stopped pid=- code=- why="" rc=1
    fi
    printf '%-5s %-24s %-9s %-8s %s\n' "$i" "$(api_url "$i")" "$state" "$pid" "$code${why:+ ($why)}"
  done
  [ -n "$first" ] || { note "no node is running"; return 1; }

  echo
  code=$(http GET "$(api_url "$first")/v1/cluster")
  case $code in
  200) echo "cluster (GET /v1/cluster on node $first):" && cluster_summary <"$TMP" | sed 's/^/  /' ;;
  404) echo "cluster: GET /v1/cluster is not served by this build (404)" ;;
  *) echo "cluster: GET /v1/cluster on node $first answered $code: $(head -c 300 "$TMP")" && rc=1 ;;
  esac

  echo
  code=$(http GET "$(api_url "$first")/v1/cluster/routes")
  if [ "$code" != 200 ]; then
    echo "routes: GET /v1/cluster/routes on node $first answered $code: $(head -c 300 "$TMP")"
    return 1
  fi
  routes_summary <"$TMP" >"$TMP.routes" || { rm -f "$TMP.routes"; die "could not read the routing table"; }
  while read -r group leader term slots; do
    if [ "$group" = revision ]; then
      echo "routes (node $first's view, revision $leader):"
      continue
    fi
    [ "$leader" = 0 ] && leader=none term=- && rc=1
    printf '  group %-4s leader %-5s term %-5s slots %s\n' "$group" "$leader" "$term" "$slots"
  done <"$TMP.routes"
  rm -f "$TMP.routes"
  return "$rc"
}

cmd_kill() {
  local i pid
  i=$(node_id "${1:-}")
  pid=$(running "$i") || die "node $i is not running"
  stop KILL "$i"
}

cmd_start() {
  local i pid
  i=$(node_id "${1:-}")
  [ -f "$(node_dir "$i")/args" ] || die "node $i was never started in $DIR (up or join first)"
  pid=$(running "$i") && die "node $i is already running (pid $pid)"
  launch "$i"
  wait_ready "$i"
  table "$i"
}

# upgrade BINARY I…: one node at a time, stop it (SIGTERM, as a service
# manager does), give it its own copy of BINARY, start it on the same
# arguments and data, wait until it is ready — then the next. The same
# command rolls back, with the previous binary (docs/runbook.md, "Upgrades
# and rollbacks").
cmd_upgrade() {
  local bin=${1:-} i d
  shift || true
  [ -n "$bin" ] && [ -x "$bin" ] || { note "upgrade: want an executable server binary, got '$bin'"; usage >&2; exit 2; }
  [ $# -gt 0 ] || { note "upgrade: name the nodes, in the order to upgrade them"; usage >&2; exit 2; }
  for i in "$@"; do
    i=$(node_id "$i")
    d=$(node_dir "$i")
    [ -f "$d/args" ] || die "node $i was never started in $DIR (up or join first)"
  done
  for i in "$@"; do
    d=$(node_dir "$i")
    echo "node $i: $("$bin" --version 2>/dev/null | head -n 1)"
    [ -z "$(running "$i")" ] || stop TERM "$i"
    cp "$bin" "$d/slotmeta.new" && mv -f "$d/slotmeta.new" "$d/slotmeta" || die "cannot install $bin for node $i"
    launch "$i"
    wait_ready "$i"
  done
  table "$@"
}

# routes_view I: node I's leader of every group, "GROUP LEADER" lines.
routes_view() {
  [ "$(http GET "$(api_url "$1")/v1/cluster/routes")" = 200 ] || return 0
  routes_summary <"$TMP" | awk '$1 != "revision" { print $1, $2 }'
}

cmd_join() {
  local i n want got deadline
  local -a argv=()
  i=$(node_id "${1:-}")
  [ -s "$DIR/members" ] || die "no cluster in $DIR; scripts/cluster.sh up first"
  n=$(tr ',' '\n' <"$DIR/members" | grep -c .)
  ((i > n)) || die "node $i is a founding node (1..$n); use start $i"
  [ ! -e "$(node_dir "$i")/args" ] || die "node $i already exists in $DIR (start $i restarts it; remove $(node_dir "$i") to join afresh)"
  ready 1 || die "node 1 ($(api_url 1)) is not ready; new nodes join through it"
  mapfile -t argv < <(base_args "$i")
  save_args "$i" "${argv[@]}" --join "$HOST:$(api_port 1)"
  launch "$i"
  wait_ready "$i"
  # A server that ignores --join bootstraps a cluster of its own and is just
  # as ready: make sure node i sees node 1's group leaders.
  deadline=$((SECONDS + 10))
  while :; do
    want=$(routes_view 1)
    got=$(routes_view "$i")
    [ -n "$got" ] && [ "$got" = "$want" ] && break
    if ((SECONDS >= deadline)); then
      note "node $i answers /readyz but its group leaders differ from node 1's:"
      note "node 1: $(echo "$want" | tr '\n' ' ')"
      note "node $i: $(echo "$got" | tr '\n' ' ')"
      note "it is not a member of node 1's cluster (does this build implement --join?); stopping it"
      stop TERM "$i" >&2
      die "remove $(node_dir "$i") before joining node $i again"
    fi
    sleep 0.5
  done
  table "$i"
}

cmd_logs() {
  local i
  i=$(node_id "${1:-}")
  [ -f "$(node_dir "$i")/log" ] || die "node $i has no log in $DIR"
  if [ "${2:-}" = -f ]; then
    rm -f "$TMP"
    exec tail -n 100 -F "$(node_dir "$i")/log"
  fi
  tail -n 100 "$(node_dir "$i")/log"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up) cmd_up "$@" ;;
down) cmd_down ;;
status) cmd_status ;;
kill) cmd_kill "$@" ;;
start) cmd_start "$@" ;;
join) cmd_join "$@" ;;
upgrade) cmd_upgrade "$@" ;;
logs) cmd_logs "$@" ;;
help | -h | --help) usage ;;
*)
  usage >&2
  exit 2
  ;;
esac
