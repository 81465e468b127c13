#!/usr/bin/env bash
# ferryd's figures (issue 4, "Benchmarks"), in one run, release build:
#   enqueue TASKS background tasks (tasks per second, each answered after its commit),
#   restart ferryd holding them (time until it answers), ferryd's RSS idle and with them queued,
#   latency from a task's completion to its event (median, p99, tiny tasks in a row),
#   a BIG_MIB MiB background download from nginx timed against `curl -o` run alternately.
# The client is Benchmarks/ferryd_bench.py, speaking the protocol of docs/protocol.md.
#
# Usage: Benchmarks/ferryd-bench.sh                       (10,000 tasks, 1 GiB, 3 runs)
#        TASKS=2000 BIG_MIB=256 RUNS=1 Benchmarks/ferryd-bench.sh   (a quick look)
# Environment: FERRY_SCRATCH (SwiftPM scratch path, default .build-release), BENCH_TMP (work
# folders, default /var/tmp: a disk, not tmpfs).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
say() { printf '%s\n' "$*" >&2; }

command -v nginx >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1 || scripts/install-deps

scratch=${FERRY_SCRATCH:-.build-release}
say "building ferryd and ferry-testserver (release, $scratch)…"
swift build -c release --product ferryd --scratch-path "$scratch" >&2
swift build -c release --product ferry-testserver --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

log=$(mktemp "${BENCH_TMP:-/var/tmp}/ferryd-bench-servers.XXXXXX")
"$bin/ferry-testserver" --nginx --lifetime 3600 >"$log" 2>&1 &
servers=$!
cleanup() { kill "$servers" 2>/dev/null || true; wait "$servers" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q '^ready' "$log" && break; sleep 0.1; done
grep -q '^ready' "$log" || { say "servers did not start:"; cat "$log" >&2; exit 1; }
test_url=$(head -n 1 "$log")
nginx_url=$(awk '$1 == "nginx" {print $2}' "$log")
nginx_root=$(awk '$1 == "nginx" {print $3}' "$log")

say "running (TASKS=${TASKS:-10000}, BIG_MIB=${BIG_MIB:-1024}, RUNS=${RUNS:-3})…"
python3 Benchmarks/ferryd_bench.py "$bin/ferryd" "$nginx_url" "$nginx_root" "$test_url"
