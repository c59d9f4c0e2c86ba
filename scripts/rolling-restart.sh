#!/usr/bin/env bash
# rolling-restart.sh: the write pause of a rolling restart of a 3-member
# ensemble, for Apache ZooKeeper and zkserverd (with and without the
# leader hand-off on SIGTERM), on this machine, in the same run.
#
# For each target and round it starts a fresh ensemble on free loopback
# ports (the same zoo.cfg for both servers: tickTime=2000, forceSync=yes)
# and restarts each member in turn, the followers first and the leader
# last, as operators do: SIGTERM, wait for the exit, start it again, wait
# until it serves a new session (zkbench wait), let --settle pass. Two
# writers run meanwhile (zkbench pause: one client each, setting one znode
# at --rate writes a second, retrying at once, moving to the next member
# of its list when its connection fails):
#   on-restarted  lists the members in restart order, so it is connected
#                 to each member as that member stops: every restart
#                 includes its reconnect (the worst case);
#   elsewhere     lists the second follower, the first, then the leader:
#                 it sits on a member that stays up while the first
#                 follower and the leader restart (it sees only what the
#                 ensemble does), and on the second follower when that one
#                 restarts.
# Before the first restart, a --baseline window with nothing restarting
# shows the pauses this machine causes by itself. Each restart has two
# windows: "down", from its SIGTERM until the member serves again, and
# "after", its settle time (catching up, clients coming back). Each writer
# reports the longest gap between two acknowledged writes that ends in
# each window. Targets alternate within a round (A B C A B C ...).
#
# Targets: zookeeper (Debian's Apache ZooKeeper 3.8, QuorumPeerMain),
# zkserverd-handoff (zkserverd as built from this checkout; a stopping
# leader hands its leadership over first) and zkserverd-nohandoff (the
# same with --leader-handoff-timeout 0).
#
# Usage: scripts/rolling-restart.sh [options]
#   --rounds N       rounds (default 2)
#   --rate N         writes a second (default 100)
#   --settle D       wait after a member serves again (seconds, default 3)
#   --baseline D     quiet window before the first restart (seconds, default 5)
#   --targets "..."  default: zookeeper zkserverd-handoff zkserverd-nohandoff
#   --out DIR        output directory (default: $TMPDIR/zkserverd-rolling-<time>)
#   --no-install     never run apt-get
# Output: one report per target, round and writer
# (r<round>-<target>-<writer>.txt), the members' logs under logs/, and
# summary.txt (every report, in run order).
# Environment: ZK_JAVA_OPTS (default "-Xmx512m") is passed to ZooKeeper's JVM.
set -euo pipefail

ROUNDS=2
RATE=100
SETTLE=3
BASELINE=5
TARGETS="zookeeper zkserverd-handoff zkserverd-nohandoff"
INSTALL=1
OUT="${TMPDIR:-/tmp}/zkserverd-rolling-$(date +%Y%m%d-%H%M%S)"
ZK_JAVA_OPTS="${ZK_JAVA_OPTS:--Xmx512m}"

die() { echo "rolling-restart: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift ;;
    --rate) RATE=$2; shift ;;
    --settle) SETTLE=$2; shift ;;
    --baseline) BASELINE=$2; shift ;;
    --targets) TARGETS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --no-install) INSTALL=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift
done

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGS=$OUT/logs
mkdir -p "$OUT/bin" "$LOGS"
MEMBERS=3

# --- Apache ZooKeeper (as scripts/bench-compare.sh runs it) ----------------

ZK_JAR=/usr/share/java/zookeeper.jar
ZK_CP="$ZK_JAR:/usr/share/java/slf4j-simple.jar"
ensure_zookeeper() {
  if [ -f "$ZK_JAR" ] && command -v java >/dev/null; then
    return
  fi
  [ "$INSTALL" = 1 ] || die "Apache ZooKeeper is not installed ($ZK_JAR) and --no-install was given"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  echo "Installing Debian's zookeeper package..."
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zookeeper zookeeper-bin default-jre-headless >/dev/null
  [ -f "$ZK_JAR" ] || die "apt-get did not provide $ZK_JAR"
}
case " $TARGETS " in *" zookeeper "*) ensure_zookeeper ;; esac

echo "Building zkserverd and zkbench..."
(cd "$ROOT" && go build -o "$OUT/bin/zkserverd" ./cmd/zkserverd && go build -o "$OUT/bin/zkbench" ./cmd/zkbench)
ZKB=$OUT/bin/zkbench

# --- members ------------------------------------------------------------------
# Member i of the running target has the directory $DIR/i, ports CPORT[i],
# QPORT[i], EPORT[i] and process PID[i].

declare -A CPORT QPORT EPORT PID
TARGET="" DIR=""

setup() { # target round
  TARGET=$1 DIR=$OUT/r$2-$1
  local ports i j
  mapfile -t ports < <("$ZKB" freeport -n $((3 * MEMBERS)))
  for i in $(seq 1 $MEMBERS); do
    CPORT[$i]=${ports[$((3 * i - 3))]} QPORT[$i]=${ports[$((3 * i - 2))]} EPORT[$i]=${ports[$((3 * i - 1))]}
  done
  for i in $(seq 1 $MEMBERS); do
    mkdir -p "$DIR/$i/data"
    echo "$i" >"$DIR/$i/data/myid"
    {
      echo "tickTime=2000"
      echo "initLimit=10"
      echo "syncLimit=5"
      echo "dataDir=$DIR/$i/data"
      echo "clientPort=${CPORT[$i]}"
      echo "clientPortAddress=127.0.0.1"
      echo "maxClientCnxns=0"
      echo "forceSync=yes"
      echo "admin.enableServer=false"
      echo "4lw.commands.whitelist=*"
      for j in $(seq 1 $MEMBERS); do
        echo "server.$j=127.0.0.1:${QPORT[$j]}:${EPORT[$j]}"
      done
    } >"$DIR/$i/zoo.cfg"
  done
}

start_member() { # member
  local i=$1 cfg=$DIR/$1/zoo.cfg log=$LOGS/$(basename "$DIR")-$1.log
  case "$TARGET" in
    zookeeper)
      # shellcheck disable=SC2086
      java $ZK_JAVA_OPTS -Dzookeeper.admin.enableServer=false \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$ZK_CP" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg" >>"$log" 2>&1 &
      ;;
    zkserverd-handoff)
      "$OUT/bin/zkserverd" --config "$cfg" --log-level info >>"$log" 2>&1 &
      ;;
    zkserverd-nohandoff)
      "$OUT/bin/zkserverd" --config "$cfg" --log-level info --leader-handoff-timeout 0 >>"$log" 2>&1 &
      ;;
    *) die "unknown target $TARGET" ;;
  esac
  PID[$i]=$!
}

stop_member() { # member: SIGTERM, wait up to 30 s, then SIGKILL
  local p=${PID[$1]:-}
  [ -n "$p" ] || return 0
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$p" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
  PID[$1]=""
}

stop_all() {
  local i
  for i in $(seq 1 $MEMBERS); do stop_member "$i"; done
}

# mode member: the Mode line of srvr ("" when it does not answer one).
mode() {
  # shellcheck disable=SC2016 # $1 is expanded by the inner shell
  timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; printf srvr >&3; cat <&3' _ "${CPORT[$1]}" 2>/dev/null |
    sed -n 's/^Mode: //p'
}

# wait_serving member: until a new session on it can read / (60 s).
wait_serving() {
  "$ZKB" wait --addr "127.0.0.1:${CPORT[$1]}" --label "$TARGET" --timeout 60s >/dev/null ||
    die "$TARGET member $1 does not serve within 60 s"
}

addrs() { # members...: their client addresses, comma-separated
  local i out=""
  for i in "$@"; do out="$out${out:+,}127.0.0.1:${CPORT[$i]}"; done
  echo "$out"
}

leader() { # the member that reports Mode: leader
  local i
  for _ in $(seq 1 100); do
    for i in $(seq 1 $MEMBERS); do
      [ "$(mode "$i")" = leader ] && { echo "$i"; return 0; }
    done
    sleep 0.1
  done
  return 1
}

WRITERS=""
stop_writers() {
  local w
  for w in $WRITERS; do kill -INT "$w" 2>/dev/null || true; done
  for w in $WRITERS; do wait "$w" || echo "  a writer failed (see $LOGS/pause-*.err)"; done
  WRITERS=""
}
cleanup() {
  stop_writers
  stop_all
  [ -n "$DIR" ] && rm -rf "$DIR"
  return 0
}
trap cleanup EXIT

# rolling target round: one rolling restart under the writer.
rolling() {
  local t=$1 r=$2 i lead marks from up to role w load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  local -a order
  setup "$t" "$r"
  for i in $(seq 1 $MEMBERS); do start_member "$i"; done
  for i in $(seq 1 $MEMBERS); do wait_serving "$i"; done
  lead=$(leader) || die "$t: no leader"
  order=()
  for i in $(seq 1 $MEMBERS); do [ "$i" = "$lead" ] || order+=("$i"); done
  order+=("$lead")
  marks=$DIR/marks
  : >"$marks"
  declare -A list=([on-restarted]="$(addrs "${order[@]}")" [elsewhere]="$(addrs "${order[1]}" "${order[0]}" "$lead")")
  for w in on-restarted elsewhere; do
    "$ZKB" pause --addr "${list[$w]}" --rate "$RATE" --marks "$marks" --out "$OUT/r$r-$t-$w.txt" \
      2>>"$LOGS/pause-r$r-$t-$w.err" &
    WRITERS="$WRITERS $!"
  done
  sleep 1
  # baseline: the same writers with nothing restarting, for the noise of
  # this machine.
  from=$(date +%s%N)
  sleep "$BASELINE"
  echo "baseline $from $(date +%s%N)" >>"$marks"
  for i in "${order[@]}"; do
    role=$(mode "$i")
    from=$(date +%s%N)
    stop_member "$i"
    start_member "$i"
    wait_serving "$i"
    up=$(date +%s%N)
    sleep "$SETTLE"
    to=$(date +%s%N)
    echo "m$i-${role:-unknown}-down $from $up" >>"$marks"
    echo "m$i-${role:-unknown}-after $up $to" >>"$marks"
    printf '  %-20s round %d: member %d (%s) restarted, serving again after %d ms\n' "$t" "$r" "$i" "${role:-?}" \
      $(((up - from) / 1000000))
  done
  stop_writers
  stop_all
  rm -rf "$DIR"
  for w in on-restarted elsewhere; do
    { echo "== round $r, $t, writer $w (load average $load)"; cat "$OUT/r$r-$t-$w.txt"; echo; } >>"$OUT/summary.txt"
    echo "    writer $w"
    sed 's/^/    /' "$OUT/r$r-$t-$w.txt"
  done
}

{
  echo "# rolling restart, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -sr)"
  echo "# zkserverd $(cd "$ROOT" && git rev-parse --short HEAD), ZooKeeper $(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo '?'), $(java -version 2>&1 | head -1)"
  echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# rounds $ROUNDS, targets $TARGETS, rate $RATE/s, settle ${SETTLE}s, baseline ${BASELINE}s"
  echo
} >"$OUT/summary.txt"
for r in $(seq 1 "$ROUNDS"); do
  for t in $TARGETS; do
    echo "round $r: $t"
    rolling "$t" "$r"
  done
done
echo "Reports: $OUT/summary.txt"
