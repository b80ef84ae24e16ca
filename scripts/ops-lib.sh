# shellcheck shell=bash
# ops-lib.sh — shared by transfer-leader.sh, rebalance-leaders.sh, add-node.sh, drain-node.sh,
# move-replica.sh and group.sh; sourced, not run.
#
# Environment:
#   SLOTMETA_API           any node's API (default http://127.0.0.1:8081)
#   SLOTMETA_TOKEN         if set, sent as "Authorization: Bearer …" (from a
#                          mode-600 file, so it never shows in ps)
#   SLOTMETA_HTTP_TIMEOUT  seconds one request may take (default 20)
#   SLOTMETA_CACERT        CA certificate to verify an https:// SLOTMETA_API
#                          against (the cluster's ca.crt from `slotmeta cert`)
#   SLOTMETA_CERT, SLOTMETA_KEY
#                          a client certificate and its key (`slotmeta cert
#                          create-client NAME`), instead of or besides a token
#
# Every request is bounded by SLOTMETA_HTTP_TIMEOUT; reads are retried while the
# server answers a retryable error (or does not answer) for up to OPS_RETRY_FOR
# seconds. Writes are sent once. JSON is read with python3 (no jq needed).

OPS_NAME=${0##*/}
OPS_API=${SLOTMETA_API:-http://127.0.0.1:8081}
OPS_API=${OPS_API%/}
OPS_HTTP_TIMEOUT=${SLOTMETA_HTTP_TIMEOUT:-20}
OPS_RETRY_FOR=15 # seconds a read keeps retrying a retryable answer
OPS_CODE=000     # status of the last request (000: no answer)

die() {
  printf '%s: %s\n' "$OPS_NAME" "$*" >&2
  exit 1
}

usage_error() {
  printf '%s: %s\n' "$OPS_NAME" "$1" >&2
  usage >&2
  exit 2
}

for _tool in curl python3; do
  command -v "$_tool" >/dev/null 2>&1 || die "$_tool is required"
done
unset _tool
[[ $OPS_HTTP_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "SLOTMETA_HTTP_TIMEOUT=$OPS_HTTP_TIMEOUT is not a number of seconds"
[[ $OPS_API =~ ^https?://[^/]+(/.*)?$ ]] || die "SLOTMETA_API=$OPS_API: want http(s)://HOST:PORT"

OPS_TMP=$(mktemp -d)
trap 'rm -rf "$OPS_TMP"' EXIT
if [ -n "${SLOTMETA_TOKEN:-}" ]; then
  [[ $SLOTMETA_TOKEN != *[$'\r\n']* ]] || die "SLOTMETA_TOKEN must be one line"
  (umask 077 && printf 'Authorization: Bearer %s\n' "$SLOTMETA_TOKEN" >"$OPS_TMP/auth")
fi

OPS_TLS=()
if [ -n "${SLOTMETA_CACERT:-}" ]; then
  [ -r "$SLOTMETA_CACERT" ] || die "SLOTMETA_CACERT=$SLOTMETA_CACERT is not a readable file"
  OPS_TLS+=(--cacert "$SLOTMETA_CACERT")
fi
if [ -n "${SLOTMETA_CERT:-}" ]; then
  [ -r "$SLOTMETA_CERT" ] && [ -r "${SLOTMETA_KEY:-}" ] || die "SLOTMETA_CERT needs SLOTMETA_KEY, both readable files"
  OPS_TLS+=(--cert "$SLOTMETA_CERT" --key "$SLOTMETA_KEY")
fi

# parse_args [-e] [-n] [-m WHAT] 'SPEC…' ARG…: reads a command line the way
# every script here does. SPEC names the options the script takes: `name` is
# a flag (--name sets $name to 1), `name=` takes a value (--name VALUE sets
# $name; a dash in a name is an underscore in its variable), which a
# function value_NAME, where the script has one, checks and converts as it
# is read. -h or --help prints the usage and exits 0; the other words go to
# the array pos, in order. Usage errors (exit 2): an unknown option, and an
# option without its value ("--name needs WHAT"; WHAT is "a value" unless -m
# says otherwise). -e also takes --name=VALUE; -n refuses every word that is
# not an option ("unexpected argument").
parse_args() {
  local equals=0 nopos=0 what="a value" spec name var val took
  while :; do
    case $1 in
    -e) equals=1 ;;
    -n) nopos=1 ;;
    -m)
      what=$2
      shift
      ;;
    *) break ;;
    esac
    shift
  done
  spec=" $1 "
  shift
  pos=()
  while [ $# -gt 0 ]; do
    name=${1#--}
    var=${name//-/_} took=0
    if [ "$1" = -h ] || [ "$1" = --help ]; then
      usage
      exit 0
    elif [[ $1 == --?* && $name != *=* && $spec == *" $name "* ]]; then
      printf -v "$var" 1
    elif [[ $1 == --?* && $name != *=* && $spec == *" $name= "* ]]; then
      [ $# -ge 2 ] || usage_error "$1 needs $what"
      val=$2 took=1
      shift
    elif ((equals)) && [[ $1 == --?*=* && $spec == *" ${name%%=*}= "* ]]; then
      var=${var%%=*} val=${1#*=} took=1
    elif ((nopos)); then
      usage_error "unexpected argument $1"
    elif [[ $1 == -* ]]; then
      usage_error "unknown option $1"
    else
      pos+=("$1")
    fi
    if ((took)); then
      if declare -F "value_$var" >/dev/null; then
        val=$("value_$var" "$val")
      fi
      printf -v "$var" '%s' "$val"
    fi
    shift
  done
}

# positive_int NAME VALUE: VALUE is an integer from 1, or a usage error.
positive_int() {
  [[ $2 =~ ^[1-9][0-9]{0,9}$ ]] || usage_error "$1 must be a whole number from 1, got '$2'"
}

# now_ms: milliseconds since the epoch.
now_ms() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    local t=${EPOCHREALTIME/[.,]/}
    echo $((10#$t / 1000))
  else
    python3 -c 'import time; print(int(time.time() * 1000))'
  fi
}

# call METHOD PATH [BODY]: one request; the status goes to OPS_CODE (000 when
# nothing answered in time), the body to $OPS_TMP/body.
call() {
  local method=$1 path=$2 body=${3-}
  local -a args=(-q -sS -X "$method" -o "$OPS_TMP/body" -w '%{http_code}'
    --connect-timeout 5 --max-time "$OPS_HTTP_TIMEOUT" -H 'Accept: application/json')
  [ -f "$OPS_TMP/auth" ] && args+=(-H "@$OPS_TMP/auth")
  [ ${#OPS_TLS[@]} -gt 0 ] && args+=("${OPS_TLS[@]}")
  [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
  : >"$OPS_TMP/body"
  OPS_CODE=$(curl "${args[@]}" "$OPS_API$path" 2>"$OPS_TMP/curl.err") || OPS_CODE=000
  [[ $OPS_CODE =~ ^[0-9]{3}$ ]] || OPS_CODE=000
}

# post_accepted PATH BODY WHAT: POST (once) a request that starts something
# that goes on — a task, a drain — and exit 1 unless it was accepted (202):
# "WHAT was refused: …".
post_accepted() {
  call POST "$1" "$2"
  [ "$OPS_CODE" = 202 ] || die "$3 was refused: $(describe)"
}

# jq_py CODE [ARG…]: run python CODE with the last response body parsed as
# `d` (None if it is not JSON) and the ARGs in sys.argv[2:].
jq_py() {
  python3 -c "import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    d = None
$1" "$OPS_TMP/body" "${@:2}"
}

# retryable: the last answer says the same request may be retried (or nothing
# answered at all).
retryable() {
  [ "$OPS_CODE" = 000 ] && return 0
  [ "$OPS_CODE" = 503 ] || return 1
  [ "$(jq_py 'print(isinstance(d, dict) and isinstance(d.get("error"), dict) and d["error"].get("retryable") is True)')" = True ]
}

# describe: the last answer, for an error message — the status, the error's
# code and message, and each detail on a line of its own.
describe() {
  if [ "$OPS_CODE" = 000 ]; then
    printf 'no answer from %s within %ss (%s)' "$OPS_API" "$OPS_HTTP_TIMEOUT" "$(tr '\n' ' ' <"$OPS_TMP/curl.err" | cut -c1-200)"
    return 0
  fi
  jq_py '
code = sys.argv[2]
e = d.get("error") if isinstance(d, dict) else None
if not isinstance(e, dict):
    raw = open(sys.argv[1], errors="replace").read().strip().replace("\n", " ")
    print("HTTP %s: %s" % (code, raw[:300] or "(empty body)"))
else:
    print("HTTP %s %s: %s%s" % (code, e.get("code", "?"), e.get("message", ""),
                                " (retryable)" if e.get("retryable") else ""))
    for f in e.get("details") or []:
        print("  - %s: %s" % (f.get("field", "?"), f.get("reason", "")))
' "$OPS_CODE"
}

# call_retry METHOD PATH [BODY]: call, again while the answer is retryable,
# for up to OPS_RETRY_FOR seconds. Only for requests that are safe to repeat.
call_retry() {
  local deadline=$((SECONDS + OPS_RETRY_FOR))
  while :; do
    call "$@"
    retryable || return 0
    ((SECONDS < deadline)) || return 0
    sleep 0.5
  done
}

# get_ok PATH: GET PATH (retrying) and exit 1 unless it answers 200.
get_ok() {
  call_retry GET "$1"
  [ "$OPS_CODE" = 200 ] || die "GET $1 on $OPS_API failed: $(describe)"
}

# json CODE [ARG…]: jq_py on an answer that must be JSON of the expected
# shape; exits 1 (from the command substitution, which set -e carries on)
# with the answer when it is not.
json() {
  local out
  out=$(jq_py "$@" 2>"$OPS_TMP/py.err") ||
    die "unexpected answer (HTTP $OPS_CODE) from $OPS_API: $(head -c 300 "$OPS_TMP/body") [$(tail -n 1 "$OPS_TMP/py.err")]"
  printf '%s\n' "$out"
}

# The task line of follow_task: "ID PHASE STATUS ATTEMPT HISTORY_LENGTH", then
# the newest history records after the first SEEN of them, then the error, if
# any.
OPS_TASK_PY='
seen = int(sys.argv[2])
h = d.get("history") or []
print(d["id"], d["phase"], d["status"], d.get("attempt", 0), len(h))
for r in h[seen:]:
    print("    %s: %s (voter replicas %s, learner replicas %s)" % (r["phase"], r.get("note") or "-",
          ",".join(map(str, r.get("voters") or [])) or "none", ",".join(map(str, r.get("learners") or [])) or "none"))
if d.get("error"):
    print("ERROR " + d["error"].replace("\n", " "))
'

# follow_task TIMEOUT: the last answer started (or resumed) a task (202 with
# it); print it, then poll GET /v1/cluster/tasks/{id} every half second,
# printing each phase change with the history notes it added, until the task
# ends or TIMEOUT seconds pass (then exit 1: the task goes on). Sets TASK_ID,
# TASK_PHASE, TASK_STATUS and TASK_ERROR, and TASK_SECONDS it took.
follow_task() {
  local timeout=$1 info attempt seen new_phase new_status start=$SECONDS
  info=$(json "$OPS_TASK_PY" 0)
  read -r TASK_ID TASK_PHASE TASK_STATUS attempt seen <<<"$(head -n 1 <<<"$info")"
  if ((attempt > 1)); then
    echo "task $TASK_ID resumed (attempt $attempt): phase $TASK_PHASE, $TASK_STATUS"
  else
    echo "task $TASK_ID started: phase $TASK_PHASE, $TASK_STATUS"
  fi
  sed '1d; /^ERROR /d' <<<"$info"
  # A task is kept in the replicated controller state, which the answering
  # node may apply a moment after the leader: a 404 right after the start is
  # waited out for a few seconds.
  local deadline=$((SECONDS + timeout)) grace=$((SECONDS + 5))
  TASK_ERROR=""
  while [ "$TASK_STATUS" = running ] || [ "$TASK_STATUS" = cancelling ]; do
    if ((SECONDS >= deadline)); then
      die "task $TASK_ID is still $TASK_STATUS in phase $TASK_PHASE after ${timeout}s; it goes on (GET /v1/cluster/tasks/$TASK_ID; POST /v1/cluster/tasks/$TASK_ID/cancel stops it)"
    fi
    sleep 0.5
    call_retry GET "/v1/cluster/tasks/$TASK_ID"
    if [ "$OPS_CODE" = 404 ] && ((SECONDS < grace)); then
      continue
    fi
    [ "$OPS_CODE" = 200 ] || die "following task $TASK_ID failed: $(describe)"
    info=$(json "$OPS_TASK_PY" "$seen")
    read -r _ new_phase new_status attempt seen <<<"$(head -n 1 <<<"$info")"
    TASK_ERROR=$(sed -n 's/^ERROR //p' <<<"$info")
    if [ "$new_phase" != "$TASK_PHASE" ]; then
      echo "[$((SECONDS - start))s] task $TASK_ID: phase $TASK_PHASE -> $new_phase ($new_status)"
    elif [ "$new_status" != "$TASK_STATUS" ]; then
      echo "[$((SECONDS - start))s] task $TASK_ID: phase $TASK_PHASE, $TASK_STATUS -> $new_status"
    fi
    sed '1d; /^ERROR /d' <<<"$info"
    TASK_PHASE=$new_phase TASK_STATUS=$new_status
  done
  TASK_SECONDS=$((SECONDS - start))
}

# print_group: the last answer is a group view; one line about it.
print_group() {
  json 'print("group %d now: %d hash slots, desired peers %s, voters %s, learners %s, leader %s (config epoch %s; observed %sms ago)" % (
    d["id"], d.get("hash_slots", 0), ",".join(str(p["node"]) for p in d.get("desired_peers") or []) or "none",
    ",".join(map(str, d.get("voters") or [])) or "none", ",".join(map(str, d.get("learners") or [])) or "none",
    d["leader"] or "none", d["config_epoch"], d["observation_age_ms"]))'
}
