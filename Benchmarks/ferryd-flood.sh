#!/usr/bin/env bash
# ferryd under abuse (issue 16): clients that pipeline without reading, read slowly, send bad
# frames or hold connections without a handshake; ferryd's RSS and CPU during and after each,
# and the round trip of a well-behaved client beside them. Release build.
#
# Usage: Benchmarks/ferryd-flood.sh                  (8 s per abuse, 5 s to settle)
#        DURATION=4 SETTLE=3 Benchmarks/ferryd-flood.sh
# Environment: FERRY_SCRATCH (SwiftPM scratch path, default .build-release), BENCH_TMP (work
# folders, default /var/tmp).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
command -v python3 >/dev/null 2>&1 || scripts/install-deps
scratch=${FERRY_SCRATCH:-.build-release}
printf 'building ferryd (release, %s)…\n' "$scratch" >&2
swift build -c release --product ferryd --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
python3 Benchmarks/ferryd_flood.py "$bin/ferryd"
