#!/usr/bin/env bash
# A background task's outcome, from ferryd's store to the app's delegate call (issue 15, item
# 6: p99 under 5 ms), for COUNT download tasks that each wait 1 s at the server (they end while
# the later ones are still being handed to ferryd). Release build; ferryd
# and ferry-testserver are started here, the app is Benchmarks/EventLatency (URLSession's
# spelling). Compare with Benchmarks/ferryd-scale.sh's burst, which stops at the socket.
#
# Usage: Benchmarks/event-latency.sh            (COUNT=1000, RUNS=3)
#        TOGETHER=1 Benchmarks/event-latency.sh (every task held at the server until all have
#                                                arrived: they end at one moment)
#        FERRYD=/path/to/ferryd Benchmarks/event-latency.sh (another build's ferryd, the same
#                                                app: alternate runs to compare two builds)
#        APP=/path/to/EventLatency Benchmarks/event-latency.sh (another build's app, likewise)
# Environment: FERRY_SCRATCH (SwiftPM scratch path, default .build-release), BENCH_TMP.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
scratch=${FERRY_SCRATCH:-.build-release}
count=${COUNT:-1000}
printf 'building ferryd, ferry-testserver and EventLatency (release, %s)…\n' "$scratch" >&2
for product in ferryd ferry-testserver EventLatency; do
  swift build -c release --product "$product" --scratch-path "$scratch" >&2
done
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
work=$(mktemp -d "${BENCH_TMP:-/var/tmp}/event-latency.XXXXXX")
server=""; ferryd=""
cleanup() {
  [ -n "$ferryd" ] && kill "$ferryd" 2>/dev/null && wait "$ferryd" 2>/dev/null
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$bin/ferry-testserver" --lifetime 3600 >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do grep -q '^ready' "$work/server.log" && break; sleep 0.1; done
grep -q '^ready' "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }
url=$(head -n 1 "$work/server.log")
for run in $(seq 1 "${RUNS:-3}"); do
  export FERRY_DATA_DIR="$work/data-$run" FERRY_RUNTIME_DIR="$work/run-$run" FERRYD_LOG_LEVEL=notice
  "${FERRYD:-$bin/ferryd}" --global-task-limit "$count" >"$work/ferryd-$run.log" 2>&1 &
  ferryd=$!
  for _ in $(seq 1 200); do [ -S "$FERRY_RUNTIME_DIR/ferryd.sock" ] && break; sleep 0.05; done
  printf 'run %s: ' "$run"
  FERRYD_PATH="${FERRYD:-$bin/ferryd}" "${APP:-$bin/EventLatency}" "$url" "$count" ${TOGETHER:+together}
  # ferryd's own CPU for the run (user + system), steadier than the p99 to compare builds.
  echo "ferryd CPU: $(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f s", ($14 + $15) / hz}' "/proc/$ferryd/stat")"
  kill "$ferryd"; wait "$ferryd" 2>/dev/null || true; ferryd=""
done
