#!/usr/bin/env bash
# ferryd at scale (issue 16): HELD tasks enqueued, held, restarted with and paged through
# (rate, RSS, restart time), and BURSTS rounds (3) of BURST tasks completing together (event latency from ferryd's
# store to the client). Release build; the client is Benchmarks/ferryd_scale.py.
#
# Usage: Benchmarks/ferryd-scale.sh                     (100,000 held, 1,000 in the burst)
#        HELD=10000 BURST=200 Benchmarks/ferryd-scale.sh  (a quick look)
#        FERRYD=/path/to/ferryd Benchmarks/ferryd-scale.sh (another build's ferryd, the same
#                                                        client: alternate runs to compare builds)
# Environment: FERRY_SCRATCH (SwiftPM scratch path, default .build-release), BENCH_TMP (work
# folders, default /var/tmp: a disk, not tmpfs).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
command -v python3 >/dev/null 2>&1 || scripts/install-deps
scratch=${FERRY_SCRATCH:-.build-release}
printf 'building ferryd and ferry-testserver (release, %s)…\n' "$scratch" >&2
swift build -c release --product ferryd --scratch-path "$scratch" >&2
swift build -c release --product ferry-testserver --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

log=$(mktemp "${BENCH_TMP:-/var/tmp}/ferryd-scale-server.XXXXXX")
"$bin/ferry-testserver" --lifetime 3600 >"$log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT
for _ in $(seq 1 100); do grep -q '^ready' "$log" && break; sleep 0.1; done
grep -q '^ready' "$log" || { printf 'the test server did not start:\n' >&2; cat "$log" >&2; exit 1; }
python3 Benchmarks/ferryd_scale.py "${FERRYD:-$bin/ferryd}" "$(head -n 1 "$log")"
