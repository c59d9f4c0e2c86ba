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
#   --targets "..."    targets, in run order (default "zookeeper zkserverd"); one alone
#                      halves the memory of a giant run, but gives no same-run ratio
#   --gctrace          run zkserverd with GODEBUG=gctrace=1 and ZooKeeper with
#                      -Xlog:gc; at the end each member's GC pauses (count, p50, p99,
#                      p99.9, max, total; Go's heap high-water mark) go to
#                      scale/gc-<target>-<member>.json (zkbench gcpauses)
# Scale scenarios (issue 35; their JSON goes under scale/, a line each to the output):
#   znodes-flat        as znodes, but every znode under one parent (--znodes children)
#   snapshot           after znodes or znodes-flat: zkbench probe writes to the leader
#                      for --probe-duration (a paced probe every 10 ms plus
#                      --probe-load sessions x 8 in flight, so that snapCount is
#                      reached) while every member's data directory is polled for
#                      snapshot files: their write time and size, write latency
#                      p99/p99.9/max while one is written, the longest probe gap
#   catchup            with --ensemble, after a load: a follower is stopped, its data
#                      wiped (myid kept) and started again; the probe writes to the
#                      leader until the follower serves the probe's znode: catch-up
#                      time (snapshot install) and the leader's latency meanwhile
#   storm              with --ensemble: zkbench storm holds --storm-sessions idle
#                      sessions (a third per member, from the --storm-sources
#                      addresses), SIGKILLs a follower, and times until every session
#                      it held is back on the other two; expirations are counted. The
#                      killed member is started again afterwards
#   watchmem           fresh start; load --watch-znodes znodes, then --watch-sessions
#                      sessions each set a data watch on every one: RSS per watch
#   fanout             --fanout-watchers sessions each add one persistent recursive
#                      watch (addWatch mode 1) on a parent; time from a child's setData
#                      to the last notification
#   --probe-duration D longest snapshot/catchup probe (default 90s)
#   --probe-load N     load sessions of the probe (default 4)
#   --storm-sessions N sessions of the storm scenario (default 36000: with an open-file
#                      limit of 20000 that cannot be raised, the two members left after
#                      the kill can hold ~38k sessions between them)
#   --storm-per-process N sessions per zkbench storm process (default 18000, under the
#                      limit); the processes share one kill at a wall-clock time
#   --storm-hold D     time from the start of the opening to the kill (default 120s, in
#                      whole seconds)
#   --storm-sources "..." local addresses the storm connects from (default
#                      "127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5": ~28k connections
#                      per source and server port)
#   --watch-znodes N   znodes of watchmem (default 100000)
#   --watch-sessions N watching sessions of watchmem, a watch per znode each (default 10)
#   --fanout-watchers N sessions of fanout (default 10000)
#   --zk-retain N      keep only ZooKeeper's N newest snapshots (pruned every 5 s while
#                      a member runs, as zkCleanup.sh would): a 10M load at the default
#                      snapCount writes tens of GB of snapshots, ZooKeeper purges none
#                      by default, and autopurge runs at most hourly (zkserverd keeps two)
#   --no-fsync         forceSync=no for both targets (giant loads: the figures are
#                      then memory, snapshot, restart and GC, not durable-write speed)
#   --keep-tree        never delete the znodes a run created (no zkbench clean after a
#                      run or a restart): with millions loaded, a fresh start (znodes,
#                      znodes-flat, watchmem, storm do one) is much faster than a clean
# The script raises its open-file limit (ulimit -n) to 400000 when it can
# (root with CAP_SYS_RESOURCE); the storm needs a descriptor per session in
# zkbench and in the members.
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
TARGETS="zookeeper zkserverd"
GCTRACE=0
PROBE_DURATION=90s
PROBE_LOAD=4
STORM_SESSIONS=36000
STORM_PER_PROC=18000
STORM_HOLD=120s
STORM_SOURCES="127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5"
WATCH_ZNODES=100000
WATCH_SESSIONS=10
FANOUT_WATCHERS=10000
KEEP_TREE=0
FORCE_SYNC=yes
ZK_RETAIN=0

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
    --targets) TARGETS=$2; shift ;;
    --gctrace) GCTRACE=1 ;;
    --probe-duration) PROBE_DURATION=$2; shift ;;
    --probe-load) PROBE_LOAD=$2; shift ;;
    --storm-sessions) STORM_SESSIONS=$2; shift ;;
    --storm-per-process) STORM_PER_PROC=$2; shift ;;
    --storm-hold) STORM_HOLD=$2; shift ;;
    --storm-sources) STORM_SOURCES=$2; shift ;;
    --watch-znodes) WATCH_ZNODES=$2; shift ;;
    --watch-sessions) WATCH_SESSIONS=$2; shift ;;
    --fanout-watchers) FANOUT_WATCHERS=$2; shift ;;
    --keep-tree) KEEP_TREE=1 ;;
    --no-fsync) FORCE_SYNC=no ;;
    --zk-retain) ZK_RETAIN=$2; shift ;;
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
SCALE=$OUT/scale
mkdir -p "$OUT/bin" "$RAW" "$LOGS" "$SCALE"
ulimit -n 400000 2>/dev/null || true

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
    echo "forceSync=$FORCE_SYNC"
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
      local gc=()
      [ "$GCTRACE" = 1 ] && gc=("-Xlog:gc:file=$LOGS/$t-$i-%p.gc.log")
      # shellcheck disable=SC2086
      java $ZK_JAVA_OPTS "${gc[@]}" -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
        >>"$LOGS/$t-$i.log" 2>&1 &
      ;;
    zkserverd)
      local profile=()
      [ "$PROFILE" = 1 ] && profile=(--pprof "127.0.0.1:${PPORT[$t.$i]}")
      local godebug=${GODEBUG:-}
      [ "$GCTRACE" = 1 ] && godebug=${godebug:+$godebug,}gctrace=1
      GODEBUG=$godebug "$OUT/bin/zkserverd" --config "$dir/zoo.cfg" --log-level warn "${profile[@]}" >>"$LOGS/$t-$i.log" 2>&1 &
      ;;
  esac
  PID[$t.$i]=$!
  [ "$t" = zookeeper ] && [ "$ZK_RETAIN" -gt 0 ] && prune_snapshots "$dir/data/version-2" "${PID[$t.$i]}"
  return 0
}

# prune_snapshots dir pid: in the background, while pid runs, delete all
# but the ZK_RETAIN newest snapshot.* files of dir every 5 s.
prune_snapshots() {
  (
    while kill -0 "$2" 2>/dev/null; do
      sleep 5
      find "$1" -maxdepth 1 -name 'snapshot.*' -printf '%T@ %p\n' 2>/dev/null | sort -rn |
        tail -n +$((ZK_RETAIN + 1)) | cut -d' ' -f2- | xargs -r rm -f
    done
  ) &
}

start_target() { # target
  local i
  for i in $(seq 1 "$MEMBERS"); do start_member "$1" "$i"; done
}

stop_target() { # target
  local i
  for i in $(seq 1 "$MEMBERS"); do stop_member "$1" "$i"; done
}

stop_member() { # target member
  local t=$1 i=$2 p
  p=${PID[$t.$i]:-}
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  PID[$t.$i]=""
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
  local args=(wait --addr "$(addrs_of "$1")" --label "$1" --since-unix-ns "$2" --timeout 900s)
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
  if [ "${KEEP:-$KEEP_TREE}" != 1 ]; then
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
    echo "  restart $t: not ready within 900 s"
  fi
  [ "$KEEP_TREE" = 1 ] || "$ZKB" clean --addr "$(addrs_of "$t")" >>"$LOGS/clean.txt" 2>&1 || true
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

# --- scale scenarios (issue 35) ---------------------------------------------

# member_index target role: the member number of the target's leader or of
# a follower (see member_addr).
member_index() {
  local addr i
  addr=$(member_addr "$1" "$2") || return 1
  for i in $(seq 1 "$MEMBERS"); do
    [ "127.0.0.1:${CPORT[$1.$i]}" = "$addr" ] && echo "$i" && return 0
  done
  return 1
}

data_dirs_of() {
  local i out=""
  for i in $(seq 1 "$MEMBERS"); do out="$out${out:+,}$OUT/$1/$i/data"; done
  echo "$out"
}

# scale_line name target json jq-filter: print one summary line of a
# scale scenario's JSON.
scale_line() {
  printf '  %-12s %-10s %s\n' "$1" "$2" "$(jq -r "$4" "$3" 2>/dev/null || echo '(no result)')"
}

PROBE_JQ='"probe p50 \(.probe_us.p50/1000|floor) ms p99 \(.probe_us.p99/1000|floor) ms max \(.probe_us.max/1000|floor) ms; writes p99 \(.writes_us.p99/1000|floor) ms p99.9 \(.writes_us.p99_9/1000|floor) ms; during snapshot n=\(.during_snapshot_us.count) p99 \(.during_snapshot_us.p99/1000|floor) ms p99.9 \(.during_snapshot_us.p99_9/1000|floor) ms max \(.during_snapshot_us.max/1000|floor) ms; longest gap \(.longest_gap_ms|floor) ms; snapshots: \([(.snapshots // [])[] | "\(.bytes/1048576|floor) MiB in \(.seconds*10|floor/10) s"] | join(", ")); ready \(.ready) \(.ready_ms // 0 | floor) ms; load \(.loadavg)"'

snapshot_one() { # target round
  local t=$1 r=$2 leader out=$SCALE/r$2-snapshot-$1.json
  leader=$(member_addr "$t" leader) || { echo "  snapshot $t: no leader"; return 0; }
  "$ZKB" probe --addr "$leader" --duration "$PROBE_DURATION" --load-sessions "$PROBE_LOAD" \
    --snap-dir "$(data_dirs_of "$t")" --out "$out" >/dev/null 2>"$LOGS/r$r-snapshot-$t.txt" ||
    echo "  snapshot $t: probe failed (see $LOGS/r$r-snapshot-$t.txt)"
  scale_line snapshot "$t" "$out" "$PROBE_JQ"
}

catchup_one() { # target round
  local t=$1 r=$2 leader f since out=$SCALE/r$2-catchup-$1.json
  [ "$MEMBERS" -gt 1 ] || { echo "  catchup $t: needs --ensemble"; return 0; }
  leader=$(member_addr "$t" leader) || { echo "  catchup $t: no leader"; return 0; }
  f=$(member_index "$t" follower) || { echo "  catchup $t: no follower"; return 0; }
  stop_member "$t" "$f"
  find "$OUT/$t/$f/data" -mindepth 1 -maxdepth 1 ! -name myid -exec rm -rf {} +
  sync
  since=$(date +%s%N)
  start_member "$t" "$f"
  "$ZKB" probe --addr "$leader" --ready-addr "127.0.0.1:${CPORT[$t.$f]}" --since-unix-ns "$since" \
    --duration "$PROBE_DURATION" --snap-dir "$OUT/$t/$f/data" --out "$out" >/dev/null 2>"$LOGS/r$r-catchup-$t.txt" ||
    echo "  catchup $t: probe failed (see $LOGS/r$r-catchup-$t.txt)"
  scale_line catchup "$t" "$out" "$PROBE_JQ"
}

# storm_one runs ceil(STORM_SESSIONS / STORM_PER_PROC) zkbench storm
# processes (a process holds at most what its open-file limit allows) that
# share one kill at a wall-clock time; the first one kills. Their results
# are summed into one line (reconnect p99: the largest of the processes').
storm_one() { # target round
  local t=$1 r=$2 f out=$SCALE/r$2-storm-$1.json procs k n killat pids=() kill
  [ "$MEMBERS" -gt 1 ] || { echo "  storm $t: needs --ensemble"; return 0; }
  fresh_start "$t"
  f=$(member_index "$t" follower) || { echo "  storm $t: no follower"; return 0; }
  procs=$(((STORM_SESSIONS + STORM_PER_PROC - 1) / STORM_PER_PROC))
  killat=$(($(date +%s%N) + $(echo "$STORM_HOLD" | sed 's/s$//') * 1000000000))
  for k in $(seq 1 "$procs"); do
    n=$((STORM_SESSIONS / procs))
    kill=()
    [ "$k" = 1 ] && kill=(--kill-pid "${PID[$t.$f]}")
    "$ZKB" storm --addr "$(addrs_of "$t")" --sessions "$n" --source "${STORM_SOURCES// /,}" \
      --kill-at-unix-ns "$killat" "${kill[@]}" --out "$out.$k" >/dev/null 2>"$LOGS/r$r-storm-$t.$k.txt" &
    pids+=($!)
  done
  for k in "${pids[@]}"; do
    wait "$k" || echo "  storm $t: a storm process failed (see $LOGS/r$r-storm-$t.*.txt)"
  done
  jq -s '{sessions: (map(.sessions)|add), opened: (map(.opened)|add), open_failed: (map(.open_failed)|add),
    open_retries: (map(.open_retries)|add), open_ms: (map(.open_ms)|max), killed: (map(.killed)|any),
    lost: (map(.lost)|add), back: (map(.back)|add), expired: (map(.expired)|add), not_back: (map(.not_back)|add),
    dropped_early: (map(.dropped_early)|add), all_back_ms: (map(.all_back_ms)|max),
    reconnect_us: {p50: (map(.reconnect_us.p50)|max), p99: (map(.reconnect_us.p99)|max), max: (map(.reconnect_us.max)|max)},
    reconnect_attempts: (map(.reconnect_attempts)|add), loadavg: .[0].loadavg, processes: length}' "$out".* >"$out" 2>/dev/null || true
  wait "${PID[$t.$f]}" 2>/dev/null || true
  PID[$t.$f]=""
  scale_line storm "$t" "$out" '"opened \(.opened)/\(.sessions) in \(.open_ms/1000|floor) s (failed \(.open_failed), retries \(.open_retries), dropped early \(.dropped_early)); killed member \(.killed): lost \(.lost), back \(.back), expired \(.expired), not back \(.not_back); all back after \(.all_back_ms|floor) ms, reconnect p50 \(.reconnect_us.p50/1000|floor) ms p99 \(.reconnect_us.p99/1000|floor) ms; attempts \(.reconnect_attempts); load \(.loadavg)"'
  start_member "$t" "$f"
  wait_members "$t" 180s "did not come back after the storm"
}

# gc_summaries writes every member's GC pause summary (--gctrace).
gc_summaries() {
  local t i files
  for t in $TARGETS; do
    for i in $(seq 1 "$MEMBERS"); do
      if [ "$t" = zookeeper ]; then
        files=("$LOGS/$t-$i"-*.gc.log)
      else
        files=("$LOGS/$t-$i.log")
      fi
      [ -f "${files[0]}" ] || continue
      cat "${files[@]}" >"$SCALE/gc-$t-$i.log"
      "$ZKB" gcpauses "$SCALE/gc-$t-$i.log" --out "$SCALE/gc-$t-$i.json" >/dev/null
      rm -f "$SCALE/gc-$t-$i.log"
      scale_line gc "$t.$i" "$SCALE/gc-$t-$i.json" '"\(.cycles) cycles; pauses p50 \(.pauses_us.p50) us p99 \(.pauses_us.p99) us p99.9 \(.pauses_us.p99_9) us max \(.pauses_us.max) us; total \(.total_ms|floor) ms; heap max \(.heap_max_mb // 0) MB"'
    done
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
    znodes-flat)
      fresh_start "$t"
      KEEP=1 run_one "$t" "$r" "$s" --workload znodes --flat
      ;;
    snapshot) snapshot_one "$t" "$r" ;;
    catchup) catchup_one "$t" "$r" ;;
    storm) storm_one "$t" "$r" ;;
    watchmem)
      fresh_start "$t"
      KEEP=1 run_one "$t" "$r" "$s" --workload watchmem --znodes "$WATCH_ZNODES" --watchers "$WATCH_SESSIONS"
      ;;
    fanout) run_one "$t" "$r" "$s" --workload watch --recursive --watchers "$FANOUT_WATCHERS" ;;
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
    echo "mode: $MEMBERS member(s) per target, forceSync=$FORCE_SYNC, loopback"
    if [ "$PROFILE" = 1 ]; then
      echo "profiling: zkserverd runs with --pprof; its profiles are under profiles/ (figures not for the record)"
    fi
    if [ -n "${ZKSERVERD_CFG:-}" ]; then
      echo "zkserverd zoo.cfg additions: $ZKSERVERD_CFG"
    fi
    echo "settings: rounds=$ROUNDS duration=$DURATION warmup=$WARMUP sessions=$SESSIONS inflight=$INFLIGHT data-size=$DATA_SIZE keys=$KEYS watchers=$WATCHERS znodes=$ZNODES"
    echo "targets: $TARGETS; gctrace=$GCTRACE zk-retain=$ZK_RETAIN keep-tree=$KEEP_TREE probe-duration=$PROBE_DURATION probe-load=$PROBE_LOAD storm-sessions=$STORM_SESSIONS storm-per-process=$STORM_PER_PROC storm-hold=$STORM_HOLD storm-sources=$STORM_SOURCES watch-znodes=$WATCH_ZNODES watch-sessions=$WATCH_SESSIONS fanout-watchers=$FANOUT_WATCHERS"
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

  [ "$GCTRACE" = 1 ] && gc_summaries
  echo "== summary: medians over $ROUNDS rounds (min-max); ratio zkserverd/zookeeper"
  "$ZKB" report --dir "$RAW" --baseline zookeeper --candidate zkserverd \
    --csv "$OUT/summary.csv" --summary-json "$OUT/summary.json" --svg "$OUT/chart.svg" | tee "$OUT/summary.txt"
  local extra=""
  [ "$PROFILE" = 1 ] && extra=", profiles/"
  echo "Results in $OUT (summary.txt, summary.csv, summary.json, chart.svg, raw/, logs/$extra)"
}

main
