#!/usr/bin/env bash
# bench-compare.sh: benchmark zkserverd against Apache ZooKeeper on this
# machine, in the same run, with the same load generator (cmd/zkbench).
#
# It installs Debian's zookeeper package when it is missing, starts Apache
# ZooKeeper (QuorumPeerMain from /usr/share/java) and zkserverd (built from
# this checkout) on free loopback ports with the same durability
# (forceSync=yes), runs every workload and scenario against each in turn
# (A B A B ... for --rounds rounds), and prints medians with min-max and the
# ratio zkserverd/ZooKeeper, including server CPU per operation. It also
# writes summary.csv, summary.json and chart.svg into the output directory,
# and keeps every run's JSON under raw/ and the server logs under logs/;
# the servers' data directories are deleted when it ends.
# With --profile it also saves zkserverd's CPU and heap profiles of every run
# under profiles/.
#
# Usage: scripts/bench-compare.sh [options]
#   --rounds N         rounds of every workload (default 3)
#   --duration D       measured time per run (default 10s)
#   --warmup D         unmeasured load before each run (default 2s)
#   --sessions N       sessions per run (default 8)
#   --inflight N       outstanding requests per session (default 16)
#   --data-size N      bytes per create/setData (default 100)
#   --keys N           pre-created keys (default 1000)
#   --watchers N       sessions of the watch scenario (default 100)
#   --znodes N         znodes loaded by the znodes scenario (default 100000)
#   --workloads "..."  operation workloads (default: create set get exists children multi mixed)
#   --scenarios "..."  scenarios (default: latency-get latency-set watch connect znodes restart;
#                      with --ensemble latency-set is measured twice, as latency-set-leader and
#                      latency-set-follower: one session on the leader, then on a follower)
#   --ensemble         three members each instead of standalone (skipped with a
#                      message if zkserverd refuses server.N lines)
#   --profile          start each zkserverd member with --pprof on a free
#                      loopback port and save a CPU profile of every measured
#                      period and a heap profile after it, per member, as
#                      profiles/r<round>/<run>-zkserverd[.<member>].{cpu,heap}.pprof
#                      (profiling costs zkserverd a little CPU: do not record
#                      figures from a profiled run)
#   --out DIR          output directory (default: $TMPDIR/zkserverd-bench-<time>)
#   --no-install       never run apt-get
# Environment: ZK_JAVA_OPTS (default "-Xmx2g") is passed to ZooKeeper's JVM;
#   ZKSERVERD_CFG, space-separated key=value lines, is appended to zkserverd's
#   zoo.cfg (for example ZKSERVERD_CFG="logStore=boltdb").
set -euo pipefail

ROUNDS=3
DURATION=10s
WARMUP=2s
SESSIONS=8
INFLIGHT=16
DATA_SIZE=100
KEYS=1000
WATCHERS=100
ZNODES=100000
WORKLOADS="create set get exists children multi mixed"
SCENARIOS="latency-get latency-set watch connect znodes restart"
ENSEMBLE=0
PROFILE=0
INSTALL=1
OUT="${TMPDIR:-/tmp}/zkserverd-bench-$(date +%Y%m%d-%H%M%S)"
ZK_JAVA_OPTS="${ZK_JAVA_OPTS:--Xmx2g}"

die() { echo "bench-compare: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift ;;
    --duration) DURATION=$2; shift ;;
    --warmup) WARMUP=$2; shift ;;
    --sessions) SESSIONS=$2; shift ;;
    --inflight) INFLIGHT=$2; shift ;;
    --data-size) DATA_SIZE=$2; shift ;;
    --keys) KEYS=$2; shift ;;
    --watchers) WATCHERS=$2; shift ;;
    --znodes) ZNODES=$2; shift ;;
    --workloads) WORKLOADS=$2; shift ;;
    --scenarios) SCENARIOS=$2; shift ;;
    --ensemble) ENSEMBLE=1 ;;
    --profile) PROFILE=1 ;;
    --out) OUT=$2; shift ;;
    --no-install) INSTALL=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done

# With three members, where the one session of latency-set is connected
# matters (a follower forwards writes to the leader): measure both.
if [ "$ENSEMBLE" = 1 ]; then
  SCENARIOS=${SCENARIOS/latency-set/latency-set-leader latency-set-follower}
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RAW=$OUT/raw
LOGS=$OUT/logs
mkdir -p "$OUT/bin" "$RAW" "$LOGS"

# --- Apache ZooKeeper -------------------------------------------------------

ZK_JAR=/usr/share/java/zookeeper.jar
ensure_zookeeper() {
  if [ -f "$ZK_JAR" ] && command -v java >/dev/null; then
    return
  fi
  [ "$INSTALL" = 1 ] || die "Apache ZooKeeper is not installed ($ZK_JAR) and --no-install was given"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "Installing Debian's zookeeper package..."
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zookeeper default-jre-headless >/dev/null
  [ -f "$ZK_JAR" ] || die "apt-get did not provide $ZK_JAR"
}

# The Debian jar's manifest lists its dependencies; slf4j-simple gives it a
# logger (warnings only, to the member's log file).
ZK_CP="$ZK_JAR:/usr/share/java/slf4j-simple.jar"

# --- building ---------------------------------------------------------------

build() {
  echo "Building zkserverd and zkbench..."
  (cd "$ROOT" && go build -o "$OUT/bin/zkserverd" ./cmd/zkserverd && go build -o "$OUT/bin/zkbench" ./cmd/zkbench)
}
ZKB=$OUT/bin/zkbench

# --- servers ----------------------------------------------------------------
# Each target ("zookeeper", "zkserverd") has MEMBERS members; member i of
# target t has a directory $OUT/t/i, a zoo.cfg there, and ports in CPORT,
# QPORT, EPORT (and PPORT, zkserverd's pprof, with --profile). PID holds the
# running processes.

declare -A CPORT QPORT EPORT PPORT PID
MEMBERS=1
[ "$ENSEMBLE" = 1 ] && MEMBERS=3
TARGETS="zookeeper zkserverd"

allocate_ports() {
  local ports
  mapfile -t ports < <("$ZKB" freeport -n $((7 * MEMBERS)))
  local k=0 t i
  for t in $TARGETS; do
    for i in $(seq 1 "$MEMBERS"); do
      CPORT[$t.$i]=${ports[$k]}; QPORT[$t.$i]=${ports[$((k + 1))]}; EPORT[$t.$i]=${ports[$((k + 2))]}
      k=$((k + 3))
    done
  done
  for i in $(seq 1 "$MEMBERS"); do
    PPORT[zkserverd.$i]=${ports[$k]}
    k=$((k + 1))
  done
}

write_config() { # target member
  local t=$1 i=$2 dir=$OUT/$1/$2 j
  mkdir -p "$dir/data"
  {
    echo "tickTime=2000"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$dir/data"
    echo "clientPort=${CPORT[$t.$i]}"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "forceSync=yes"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=*"
    if [ "$MEMBERS" -gt 1 ]; then
      for j in $(seq 1 "$MEMBERS"); do
        echo "server.$j=127.0.0.1:${QPORT[$t.$j]}:${EPORT[$t.$j]}"
      done
    fi
    if [ "$t" = zkserverd ] && [ -n "${ZKSERVERD_CFG:-}" ]; then
      local cfg_lines # split on spaces, without globbing (a value may be "*")
      read -ra cfg_lines <<<"$ZKSERVERD_CFG"
      printf '%s\n' "${cfg_lines[@]}"
    fi
  } >"$dir/zoo.cfg"
  [ "$MEMBERS" -gt 1 ] && echo "$i" >"$dir/data/myid"
  return 0
}

start_member() { # target member
  local t=$1 i=$2 dir=$OUT/$1/$2
  case "$t" in
    zookeeper)
      # shellcheck disable=SC2086
      java $ZK_JAVA_OPTS -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
        >>"$LOGS/$t-$i.log" 2>&1 &
      ;;
    zkserverd)
      local profile=()
      [ "$PROFILE" = 1 ] && profile=(--pprof "127.0.0.1:${PPORT[$t.$i]}")
      "$OUT/bin/zkserverd" --config "$dir/zoo.cfg" --log-level warn "${profile[@]}" >>"$LOGS/$t-$i.log" 2>&1 &
      ;;
  esac
  PID[$t.$i]=$!
}

start_target() { # target
  local i
  for i in $(seq 1 "$MEMBERS"); do start_member "$1" "$i"; done
}

stop_target() { # target
  local t=$1 i p
  for i in $(seq 1 "$MEMBERS"); do
    p=${PID[$t.$i]:-}
    [ -n "$p" ] || continue
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 1 300); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    PID[$t.$i]=""
  done
}

alive() { # target: all members still running?
  local i
  for i in $(seq 1 "$MEMBERS"); do
    kill -0 "${PID[$1.$i]:-0}" 2>/dev/null || return 1
  done
}

addrs_of() {
  local i out=""
  for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}127.0.0.1:${CPORT[$1.$i]}"; done
  echo "$out"
}

# member_addr target role: the client address of the target's leader
# (role "leader") or of its first member that is not the leader, from the
# Mode line of the srvr four-letter word.
member_addr() {
  local t=$1 role=$2 i mode
  for i in $(seq 1 "$MEMBERS"); do
    # shellcheck disable=SC2016 # $1 is expanded by the inner shell
    mode=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; printf srvr >&3; cat <&3' _ "${CPORT[$t.$i]}" 2>/dev/null |
      sed -n 's/^Mode: //p')
    if { [ "$role" = leader ] && [ "$mode" != follower ]; } || { [ "$role" = follower ] && [ "$mode" = follower ]; }; then
      echo "127.0.0.1:${CPORT[$t.$i]}"
      return 0
    fi
  done
  return 1
}

pids_of() {
  local i out=""
  for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}${PID[$1.$i]}"; done
  echo "$out"
}

pprof_urls_of() { # zkserverd's pprof endpoints, one per member
  local i out=""
  for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}http://127.0.0.1:${PPORT[$1.$i]}"; done
  echo "$out"
}

# cleanup stops the servers and deletes their data: a 3-member run of the
# znodes scenario leaves ~9 GB of ZooKeeper logs and snapshots.
cleanup() {
  local t
  for t in $TARGETS; do stop_target "$t"; done
  for t in $TARGETS; do wipe_data "$t" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_ready target label-file: wait until the target serves a getData;
# with a file, record the time since its start as a restart result.
wait_ready() { # target since-ns [out-file]
  local args=(wait --addr "$(addrs_of "$1")" --label "$1" --since-unix-ns "$2" --timeout 180s)
  [ -n "${3:-}" ] && args+=(--out "$3")
  "$ZKB" "${args[@]}" >/dev/null
}

# --- runs -------------------------------------------------------------------

common_flags() {
  echo --warmup "$WARMUP" --duration "$DURATION" --sessions "$SESSIONS" --inflight "$INFLIGHT" \
    --data-size "$DATA_SIZE" --keys "$KEYS" --watchers "$WATCHERS" --znodes "$ZNODES"
}

# run_one target round name [zkbench run flags...]: one measured run, then
# its summary line; the run's znodes are deleted unless KEEP=1.
run_one() {
  local t=$1 r=$2 name=$3
  shift 3
  local base="r$r-$name-$t" profile=()
  # A member that lost its leader during the previous run (ZooKeeper's
  # ensemble sometimes re-elects under load) must serve again first.
  wait_members "$t" 60s "not serving before $name"
  # The previous run's data (the other target's, when they alternate) may
  # still be in the page cache, hundreds of MB after a create run with
  # large values; written back during this run, it would compete with this
  # target's fsyncs. Each run starts with nothing left to write.
  sync
  if [ "$PROFILE" = 1 ] && [ "$t" = zkserverd ]; then
    profile=(--pprof "$(pprof_urls_of "$t")" --profile-dir "$OUT/profiles/r$r")
  fi
  # shellcheck disable=SC2046
  if ! "$ZKB" run --addr "$(addrs_of "$t")" --server-pid "$(pids_of "$t")" --label "$t" --name "$name" \
    $(common_flags) "${profile[@]}" "$@" --out "$RAW/$base.json" >"$LOGS/$base.txt" 2>&1; then
    echo "  $name $t: FAILED (see $LOGS/$base.txt)"
    tail -n 3 "$LOGS/$base.txt" | sed 's/^/    /'
  else
    printf '  %-12s %-10s %s | %s\n' "$name" "$t" "$(grep -m1 ' ops ' "$LOGS/$base.txt" | sed 's/^ *ops *//')" \
      "$(grep -m1 '^  latency ' "$LOGS/$base.txt" | sed 's/^ *latency *//; s/  *(n=.*//')"
    grep '^  warning ' "$LOGS/$base.txt" | sed "s/^ */    $name $t: /" || true
  fi
  if [ "${KEEP:-0}" != 1 ]; then
    "$ZKB" clean --addr "$(addrs_of "$t")" >>"$LOGS/clean.txt" 2>&1 || echo "  clean after $name on $t failed"
  fi
}

restart_one() { # target round
  local t=$1 r=$2 since
  stop_target "$t"
  since=$(date +%s%N)
  start_target "$t"
  if wait_ready "$t" "$since" "$RAW/r$r-restart-$t.json"; then
    printf '  %-12s %-10s ready after %s\n' restart "$t" \
      "$(grep -o '"ready_ms": [0-9.]*' "$RAW/r$r-restart-$t.json" | sed 's/.*: //') ms"
  else
    echo "  restart $t: not ready within 180 s"
  fi
  "$ZKB" clean --addr "$(addrs_of "$t")" >>"$LOGS/clean.txt" 2>&1 || true
}

# wait_members target timeout message: wait until every member serves a read.
wait_members() {
  local i
  for i in $(seq 1 "$MEMBERS"); do
    "$ZKB" wait --addr "127.0.0.1:${CPORT[$1.$i]}" --timeout "$2" >/dev/null ||
      echo "  $1 member $i $3"
  done
}

fresh_start() { # target: restart on empty data directories, untimed, and wait until every member serves
  stop_target "$1"
  wipe_data "$1"
  start_target "$1"
  wait_members "$1" 180s "did not come back after a restart"
}

# wipe_data empties a stopped target's data directories (myid stays).
# Earlier runs' data is cleaned from the tree but stays in the logs and
# snapshots: ZooKeeper purges none by default, and a run with --znodes
# 1000000 left gigabytes of them.
wipe_data() { # target
  local i d
  for i in $(seq 1 "$MEMBERS"); do
    d=$OUT/$1/$i/data
    find "$d" -mindepth 1 -maxdepth 1 ! -name myid -exec rm -rf {} +
  done
}

scenario_one() { # target round scenario
  local t=$1 r=$2 s=$3
  case "$s" in
    latency-get) run_one "$t" "$r" "$s" --workload get --sessions 1 --inflight 1 ;;
    latency-set) run_one "$t" "$r" "$s" --workload set --sessions 1 --inflight 1 ;;
    latency-set-leader | latency-set-follower)
      local addr
      wait_members "$t" 60s "not serving before $s"
      if ! addr=$(member_addr "$t" "${s#latency-set-}"); then
        echo "  $s $t: no ${s#latency-set-} found (srvr)"
        return 0
      fi
      run_one "$t" "$r" "$s" --workload set --sessions 1 --inflight 1 --addr "$addr"
      ;;
    watch | connect) run_one "$t" "$r" "$s" --workload "$s" ;;
    # Memory per znode is measured on a freshly started server (a JVM or Go
    # heap grown by earlier runs would hide the growth). The znodes stay
    # for the restart that follows (and are cleaned there).
    znodes)
      fresh_start "$t"
      KEEP=1 run_one "$t" "$r" "$s" --workload znodes
      ;;
    restart) restart_one "$t" "$r" ;;
    *) echo "  unknown scenario $s" ;;
  esac
}

write_conditions() {
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(free -g | awk '/Mem:/{print $2}') GiB RAM, $(uname -sr)"
    echo "shared: load generator and both servers on the same machine"
    echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "zookeeper: $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null || echo unknown) (Debian), $(java -version 2>&1 | head -1), ZK_JAVA_OPTS=$ZK_JAVA_OPTS"
    echo "zkserverd: $(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo unknown) built with $(go version | cut -d' ' -f3)"
    echo "mode: $MEMBERS member(s) per target, forceSync=yes, loopback"
    if [ "$PROFILE" = 1 ]; then
      echo "profiling: zkserverd runs with --pprof; its profiles are under profiles/ (figures not for the record)"
    fi
    if [ -n "${ZKSERVERD_CFG:-}" ]; then
      echo "zkserverd zoo.cfg additions: $ZKSERVERD_CFG"
    fi
    echo "settings: rounds=$ROUNDS duration=$DURATION warmup=$WARMUP sessions=$SESSIONS inflight=$INFLIGHT data-size=$DATA_SIZE keys=$KEYS watchers=$WATCHERS znodes=$ZNODES"
    echo "workloads: $WORKLOADS"
    echo "scenarios: $SCENARIOS"
  } >"$OUT/conditions.txt"
}

main() {
  [ "$INSTALL" = 1 ] || [ -f "$ZK_JAR" ] || die "no $ZK_JAR"
  ensure_zookeeper
  build
  allocate_ports
  local t i
  for t in $TARGETS; do
    for i in $(seq 1 "$MEMBERS"); do write_config "$t" "$i"; done
    start_target "$t"
  done
  if [ "$MEMBERS" -gt 1 ]; then
    sleep 3
    if ! alive zkserverd; then
      echo "SKIPPED: zkserverd refuses the 3-member configuration (server.N lines):"
      tail -n 3 "$LOGS"/zkserverd-*.log | sed 's/^/  /'
      echo "Run without --ensemble for the standalone comparison."
      exit 0
    fi
  fi
  for t in $TARGETS; do
    wait_ready "$t" "$(date +%s%N)" || die "$t did not become ready; see $LOGS"
  done
  write_conditions
  sed 's/^/# /' "$OUT/conditions.txt"

  local r w s
  for r in $(seq 1 "$ROUNDS"); do
    echo "== round $r of $ROUNDS"
    for w in $WORKLOADS; do
      for t in $TARGETS; do run_one "$t" "$r" "$w" --workload "$w"; done
    done
    for s in $SCENARIOS; do
      for t in $TARGETS; do scenario_one "$t" "$r" "$s"; done
    done
  done

  echo "== summary: medians over $ROUNDS rounds (min-max); ratio zkserverd/zookeeper"
  "$ZKB" report --dir "$RAW" --baseline zookeeper --candidate zkserverd \
    --csv "$OUT/summary.csv" --summary-json "$OUT/summary.json" --svg "$OUT/chart.svg" | tee "$OUT/summary.txt"
  local extra=""
  [ "$PROFILE" = 1 ] && extra=", profiles/"
  echo "Results in $OUT (summary.txt, summary.csv, summary.json, chart.svg, raw/, logs/$extra)"
}

main
