#!/usr/bin/env bash
# The Byte Club app (issue 14, "Done means"), release builds on loopback:
#   (a) `byteclub photos --json` over 200 photos with all thumbnails: cold (the server makes
#       each thumbnail as the app's download tasks, 6 at a time, ask for it); the first time for
#       the app with the server's thumbnails made, beside curl fetching the same 200 with 6
#       parallel connections (`curl --parallel --parallel-max 6`, the same work); and the second
#       time (all from the app's cache, one listing request).
#   (b) one photo of UPLOAD_MIB (1 GiB) uploaded through `byteclub photos upload` (a Ferry
#       upload task: an IETF resumable upload) against `curl -T` to the same server's files_put,
#       RUNS times alternating; medians and the byteclub/curl rate ratio.
#
# Usage: Benchmarks/byteclub-app.sh                       (200 photos, 1 GiB, 3 runs)
#        PHOTOS=50 UPLOAD_MIB=256 RUNS=1 Benchmarks/byteclub-app.sh   (a quick look)
# Environment: BENCH_TMP (work dir's parent; default /var/tmp, a disk), BYTECLUB_SCRATCH
#              (release scratch path; default .build-bc-release), KEEP=1 keeps the work dir.
set -euo pipefail

RUNS=${RUNS:-3}
PHOTOS=${PHOTOS:-200}
UPLOAD_MIB=${UPLOAD_MIB:-1024}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
say() { printf '%s\n' "$*" >&2; }

if ! command -v curl >/dev/null 2>&1 || ! command -v convert >/dev/null 2>&1; then scripts/install-deps; fi
scratch=${BYTECLUB_SCRATCH:-.build-bc-release}
say "building byteclub and byteclub-server (release, $scratch)…"
swift build -c release --product byteclub --scratch-path "$scratch" >&2
swift build -c release --product byteclub-server --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

base=${BENCH_TMP:-/var/tmp}
work=$(mktemp -d "$base/byteclub-app.XXXXXX")
server_pid=""
. "$here/Benchmarks/nginx.sh"  # stop_pid
cleanup() {
  stop_pid "$server_pid"
  if [ "${KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
mkdir -p "$work"/{photos,home,logs,measure}
token=bench-token
"$bin/byteclub-server" --port 0 --data-dir "$work/data" --dev-access-token "$token" --log-level warning \
  >"$work/logs/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
  url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$work/logs/server.log")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "${url:-}" ] || { say "byteclub-server did not start: $(cat "$work/logs/server.log")"; exit 1; }
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/config" XDG_CACHE_HOME="$work/home/cache" XDG_DATA_HOME="$work/home/data"
export BYTECLUB_SERVER="$url" BYTECLUB_ACCESS_TOKEN="$token"
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -n "$1" | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# (a) 200 photos of 1600×1200 (~200 KiB each), uploaded with curl (setup, not measured).
say "making and uploading $PHOTOS photos…"
convert -size 1600x1200 plasma:fractal -quality 85 "$work/photos/seed.jpg"
for i in $(seq -w 1 "$PHOTOS"); do
  curl -sf -o /dev/null -T "$work/photos/seed.jpg" -H "Authorization: Bearer $token" \
    "$url/1/files_put/dropbox/byteclub/photos/p$i.jpg?overwrite=false"
done
# Cold: nothing cached anywhere, the server makes every thumbnail (libvips) as it is asked.
start=$(now)
"$bin/byteclub" photos --json >"$work/measure/cold.json" 2>"$work/logs/cold.err"
cold=$(elapsed "$start" "$(now)")
shown=$(grep -c '"thumbnail"' "$work/measure/cold.json" || true)
# First time for the app, the server's thumbnails made: byteclub against curl, same work.
rm -rf "$XDG_CACHE_HOME/byteclub"
start=$(now)
"$bin/byteclub" photos --json >"$work/measure/first.json" 2>"$work/logs/first.err"
first=$(elapsed "$start" "$(now)")
urls=()
for i in $(seq -w 1 "$PHOTOS"); do urls+=(-o "$work/measure/t$i.jpg" "$url/1/thumbnails/dropbox/byteclub/photos/p$i.jpg?size=m"); done
start=$(now)
curl -sf --no-progress-meter --parallel --parallel-max 6 -H "Authorization: Bearer $token" "${urls[@]}"
peer=$(elapsed "$start" "$(now)")
# Second time: every thumbnail from the app's cache, one listing request.
start=$(now)
"$bin/byteclub" photos --json >"$work/measure/second.json" 2>"$work/logs/second.err"
second=$(elapsed "$start" "$(now)")

# (b) one big photo: byteclub vs curl -T, alternating.
say "uploading a $UPLOAD_MIB MiB photo, $RUNS run(s) each…"
head -c $((UPLOAD_MIB << 20)) /dev/urandom >"$work/photos/big.jpg"
for run in $(seq "$RUNS"); do
  start=$(now)
  curl -sf -o /dev/null -T "$work/photos/big.jpg" -H "Authorization: Bearer $token" \
    "$url/1/files_put/dropbox/bench/curl-$run.jpg"
  elapsed "$start" "$(now)" >>"$work/measure/curl"; echo >>"$work/measure/curl"
  start=$(now)
  "$bin/byteclub" photos upload "$work/photos/big.jpg" >/dev/null 2>>"$work/logs/upload.err"
  elapsed "$start" "$(now)" >>"$work/measure/byteclub"; echo >>"$work/measure/byteclub"
done
c=$(median "$work/measure/curl")
b=$(median "$work/measure/byteclub")

printf '\nByte Club app, release, loopback, %s cores, %s\n\n' "$(nproc)" "$(date -u +%Y-%m-%d)"
printf '| what | byteclub | peer | ratio |\n|---|---|---|---|\n'
printf '| %s photos listed, thumbnails made by the server and downloaded (%s shown) | %s s | — | — |\n' "$PHOTOS" "$shown" "$cold"
printf '| the same with the app'"'"'s cache empty (the server'"'"'s made) | %s s | curl, 6 parallel: %s s | %s |\n' \
  "$first" "$peer" "$(awk -v p="$peer" -v b="$first" 'BEGIN { printf "%.2f", p / b }')"
printf '| the same listing again, thumbnails from the app'"'"'s cache | %s s | — | — |\n' "$second"
printf '| %s MiB photo upload (median of %s) | %s s, %s MiB/s | curl -T: %s s, %s MiB/s | %s |\n' \
  "$UPLOAD_MIB" "$RUNS" "$b" "$(awk -v s="$b" -v m="$UPLOAD_MIB" 'BEGIN { printf "%.0f", m / s }')" \
  "$c" "$(awk -v s="$c" -v m="$UPLOAD_MIB" 'BEGIN { printf "%.0f", m / s }')" "$(awk -v c="$c" -v b="$b" 'BEGIN { printf "%.2f", c / b }')"
printf '\nratio: the peer'"'"'s time over byteclub'"'"'s (above 1: byteclub is faster).\n'
