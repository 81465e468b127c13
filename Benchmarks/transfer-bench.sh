#!/usr/bin/env bash
# Ferry vs curl, side by side in one run, on loopback against nginx (issue 2, "Proof"):
#   (a) download of one large file   curl -s -o FILE URL        vs  ferry get URL -o FILE --quiet
#                                    (and the same through a Session: ferry get --many LIST --no-batch, one URL)
#   (b) upload of one large file     curl -s -T FILE URL        vs  ferry put FILE URL --method PUT
#   (c) many 16 KiB downloads over 6 connections
#                                    curl --parallel --parallel-max 6 -K cfg
#                                                               vs  ferry get --many LIST --connections 6
#                                    (and, for comparison only, the same with --no-batch: through a Session,
#                                    and Benchmarks/HTTPClientPeer: AsyncHTTPClient alone, the Session's HTTP layer,
#                                    writing each file in place, then moving files as the Session's are moved)
#   (d) peak RSS of every run (/usr/bin/time -f %M)
# Each measurement runs RUNS times (curl and ferry alternating); the table shows medians.
# Targets: ferry ≥ 0.9 × curl on the large files, ≥ 1.0 × curl on the small ones, peak RSS < 64 MiB.
#
# Usage: Benchmarks/transfer-bench.sh            (1 GiB, 1,000 × 16 KiB, 5 runs)
#        BIG_MIB=256 SMALL_COUNT=200 RUNS=1 Benchmarks/transfer-bench.sh   (a quick look)
# On ext4, creating files is slow for a few minutes after many were deleted (a previous run's
# work dir): both clients' small-file times then move by 2–3×. Wait ~5 minutes between runs.
# Environment: BENCH_TMP (where the work dir goes; default /var/tmp, a disk, not tmpfs),
#              FERRY_SCRATCH (SwiftPM scratch path for the release build), KEEP=1 keeps the work dir.
set -euo pipefail

RUNS=${RUNS:-5}
BIG_MIB=${BIG_MIB:-1024}
SMALL_COUNT=${SMALL_COUNT:-1000}
SMALL_KIB=16
CONNECTIONS=6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

say() { printf '%s\n' "$*" >&2; }

# Tools: nginx, curl and GNU time come from Debian through the project's script.
if ! command -v nginx >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 || [ ! -x /usr/bin/time ]; then
  scripts/install-deps
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)  # for its version in the table

# Ferry in release.
scratch=${FERRY_SCRATCH:-.build-cli-release}
say "building ferry (release, $scratch)…"
# Statically linked Swift runtime and Foundation, as a packaged ferry would be: 6 ms less at every start.
swift build -c release --product ferry --scratch-path "$scratch" --static-swift-stdlib >&2
FERRY="$(swift build -c release --product ferry --scratch-path "$scratch" --static-swift-stdlib --show-bin-path)/ferry"
[ -x "$FERRY" ] || { say "no ferry binary at $FERRY"; exit 1; }
swift build -c release --product HTTPClientPeer --scratch-path "$scratch" --static-swift-stdlib >&2
PEER="$(dirname "$FERRY")/HTTPClientPeer"

# One work dir on disk for both clients' outputs and nginx's files.
base=${BENCH_TMP:-/var/tmp}
work=$(mktemp -d "$base/ferry-bench.XXXXXX")
nginx_pid=""
. "$here/Benchmarks/nginx.sh"
cleanup() {
  stop_pid "$nginx_pid"
  if [ "${KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work"/{www/upload,www/small,out,logs,temp,measure}
chmod 777 "$work/www/upload" "$work/temp"

say "making a ${BIG_MIB} MiB file and ${SMALL_COUNT} files of ${SMALL_KIB} KiB…"
head -c $((BIG_MIB << 20)) /dev/urandom >"$work/www/big.bin"
head -c $((SMALL_COUNT * SMALL_KIB * 1024)) /dev/urandom |
  split -b $((SMALL_KIB * 1024)) -d -a 5 - "$work/www/small/f"
big_bytes=$((BIG_MIB << 20))
small_bytes=$((SMALL_COUNT * SMALL_KIB * 1024))

start_nginx "$work"
url=$nginx_url

echo "$url/big.bin" >"$work/big-list.txt"
# Lists for the many-small-files case.
: >"$work/curl-small.cfg"
: >"$work/ferry-small.txt"
for f in "$work"/www/small/f*; do
  name=${f##*/}
  printf 'url = "%s/small/%s"\noutput = "%s/out/curl-small/%s"\n' "$url" "$name" "$work" "$name" >>"$work/curl-small.cfg"
  printf '%s/small/%s\n' "$url" "$name" >>"$work/ferry-small.txt"
done

# measure NAME CMD…: runs CMD under GNU time, appends "seconds rss_kib" to measure/NAME.
measure() {
  local name=$1
  shift
  sync
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%M' -o "$work/measure/$name.rss" "$@" >"$work/measure/$name.out" 2>"$work/measure/$name.err" || {
    say "FAILED: $name: $*"
    cat "$work/measure/$name.err" >&2
    exit 1
  }
  t1=$(date +%s%N)
  echo "$(((t1 - t0) / 1000)) $(tail -n1 "$work/measure/$name.rss")" >>"$work/measure/$name"
}

# median FILE COLUMN: the median of one column (1: microseconds, 2: RSS KiB).
median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
# max FILE COLUMN
maxcol() { awk -v c="$2" 'BEGIN{m=0} {if ($c>m) m=$c} END {print m}' "$1"; }

check_same() {
  cmp -s "$1" "$2" || { say "MISMATCH: $2 differs from $1"; exit 1; }
}

for run in $(seq "$RUNS"); do
  say "run $run/$RUNS: download"
  order="curl ferry"; [ $((run % 2)) -eq 0 ] && order="ferry curl"
  for who in $order; do
    rm -f "$work/out/big.bin"
    if [ "$who" = curl ]; then
      measure curl-down curl -s -o "$work/out/big.bin" "$url/big.bin"
    else
      measure ferry-down "$FERRY" get "$url/big.bin" -o "$work/out/big.bin" --quiet
    fi
    if [ "$run" -eq 1 ]; then check_same "$work/www/big.bin" "$work/out/big.bin"; fi
  done
  rm -f "$work/out/big.bin"
  # For comparison with the issue's target (a Session's download at or above curl -o): the
  # same file through a Session, as a download task whose file is moved into place.
  mkdir -p "$work/out/session-big"
  measure ferry-session-down "$FERRY" get --many "$work/big-list.txt" --dir "$work/out/session-big" --connections 1 --quiet --no-batch
  if [ "$run" -eq 1 ]; then check_same "$work/www/big.bin" "$work/out/session-big/big.bin"; fi
  rm -f "$work/out/session-big/big.bin"

  say "run $run/$RUNS: upload"
  for who in $order; do
    rm -f "$work/www/upload/"*
    if [ "$who" = curl ]; then
      measure curl-up curl -s -T "$work/www/big.bin" "$url/upload/big.bin"
    else
      measure ferry-up "$FERRY" put "$work/www/big.bin" "$url/upload/big.bin" --method PUT --quiet
    fi
    if [ "$run" -eq 1 ]; then check_same "$work/www/big.bin" "$work/www/upload/big.bin"; fi
  done
  rm -f "$work/www/upload/"*

  say "run $run/$RUNS: ${SMALL_COUNT} × ${SMALL_KIB} KiB"
  for who in $order; do
    # A fresh folder per run, deleted only at the end: ext4 makes creating files costly
    # right after many were deleted (recently_deleted() in inode allocation), which would
    # measure the file system's bookkeeping rather than the clients.
    dest="$work/out/small-$who-$run"
    mkdir -p "$dest"
    if [ "$who" = curl ]; then
      sed "s#/out/curl-small/#/out/small-curl-$run/#" "$work/curl-small.cfg" >"$work/curl-small-$run.cfg"
      measure curl-small curl -s --no-progress-meter --parallel --parallel-max "$CONNECTIONS" -K "$work/curl-small-$run.cfg"
    else
      measure ferry-small "$FERRY" get --many "$work/ferry-small.txt" --dir "$dest" --connections "$CONNECTIONS" --quiet
    fi
    got=$(find "$dest" -type f | wc -l)
    [ "$got" -eq "$SMALL_COUNT" ] || { say "$who wrote $got of $SMALL_COUNT small files"; exit 1; }
    if [ "$run" -eq 1 ]; then check_same "$work/www/small/f00007" "$dest/f00007"; fi
  done
  # For comparison, not targets, in an order that turns with each run: the same files through
  # a Session (ferry get --many --no-batch); the Session's HTTP layer alone (AsyncHTTPClient,
  # no session), writing in place; and the same moving its files as the Session's are moved
  # (hidden folder, rename, chmod, stat). Each into a fresh folder.
  comparisons="session peer peer-files"
  case $((run % 3)) in 1) comparisons="peer peer-files session" ;; 2) comparisons="peer-files session peer" ;; esac
  for who in $comparisons; do
    dest="$work/out/small-$who-$run"
    mkdir -p "$dest"
    case $who in
      session) measure ferry-session "$FERRY" get --many "$work/ferry-small.txt" --dir "$dest" --connections "$CONNECTIONS" --quiet --no-batch ;;
      peer) measure http-client-peer "$PEER" "$work/ferry-small.txt" "$dest" "$CONNECTIONS" ;;
      peer-files) measure http-client-peer-files "$PEER" "$work/ferry-small.txt" "$dest" "$CONNECTIONS" --as-session ;;
    esac
    got=$(find "$dest" -type f | wc -l)
    [ "$got" -eq "$SMALL_COUNT" ] || { say "$who wrote $got of $SMALL_COUNT small files"; exit 1; }
    if [ "$run" -eq 1 ]; then check_same "$work/www/small/f00007" "$dest/f00007"; fi
  done
done

# The table.
mib() { awk -v b="$1" -v us="$2" 'BEGIN { printf "%.1f", (b / 1048576) / (us / 1e6) }'; }
ratio() { awk -v f="$1" -v c="$2" 'BEGIN { printf "%.2f", (c / f) }'; }   # ferry rate / curl rate = curl time / ferry time
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t ? "ok" : "MISSED") }'; }

printf '\nFerry vs curl on loopback, nginx %s, %s; %d runs each, medians\n' \
  "$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')" "$(curl --version | head -n1 | cut -d' ' -f1-2)" "$RUNS"
printf '%-28s %12s %12s %10s %8s %14s %14s\n' "case" "curl MiB/s" "ferry MiB/s" "ferry/curl" "target" "ferry RSS MiB" "curl RSS MiB"
row() {
  local label=$1 key=$2 bytes=$3 target=$4
  local cu fu cr fr fmax
  cu=$(median "$work/measure/curl-$key" 1)
  fu=$(median "$work/measure/ferry-$key" 1)
  cr=$(median "$work/measure/curl-$key" 2)
  fmax=$(maxcol "$work/measure/ferry-$key" 2)
  local r
  r=$(ratio "$fu" "$cu")
  printf '%-28s %12s %12s %10s %8s %14s %14s\n' "$label" "$(mib "$bytes" "$cu")" "$(mib "$bytes" "$fu")" "$r" \
    "≥$target $(verdict "$r" "$target")" "$(awk -v k="$fmax" 'BEGIN{printf "%.1f", k/1024}')" "$(awk -v k="$cr" 'BEGIN{printf "%.1f", k/1024}')"
}
row "download ${BIG_MIB} MiB" down "$big_bytes" 0.9
session_down_us=$(median "$work/measure/ferry-session-down" 1)
printf '%-28s %12s %12s %10s %8s %14s\n' "  the same through a Session" "" "$(mib "$big_bytes" "$session_down_us")" \
  "$(ratio "$session_down_us" "$(median "$work/measure/curl-down" 1)")" "≥1.0 $(verdict "$(ratio "$session_down_us" "$(median "$work/measure/curl-down" 1)")" 1.0)" "$(awk -v k="$(maxcol "$work/measure/ferry-session-down" 2)" 'BEGIN{printf "%.1f", k/1024}')"
row "upload ${BIG_MIB} MiB" up "$big_bytes" 0.9
row "${SMALL_COUNT} × ${SMALL_KIB} KiB, ${CONNECTIONS} conns" small "$small_bytes" 1.0
session_us=$(median "$work/measure/ferry-session" 1)
printf '%-28s %12s %12s %10s %8s %14s\n' "  the same through a Session" "" "$(mib "$small_bytes" "$session_us")" \
  "$(ratio "$session_us" "$(median "$work/measure/curl-small" 1)")" "(none)" "$(awk -v k="$(maxcol "$work/measure/ferry-session" 2)" 'BEGIN{printf "%.1f", k/1024}')"
peer_us=$(median "$work/measure/http-client-peer" 1)
printf '%-28s %12s %12s %10s %8s %14s\n' "  AsyncHTTPClient alone" "" "$(mib "$small_bytes" "$peer_us")" \
  "$(ratio "$peer_us" "$(median "$work/measure/curl-small" 1)")" "(none)" "$(awk -v k="$(maxcol "$work/measure/http-client-peer" 2)" 'BEGIN{printf "%.1f", k/1024}')"
peer_files_us=$(median "$work/measure/http-client-peer-files" 1)
printf '%-28s %12s %12s %10s %8s %14s\n' "  the same, Session's files" "" "$(mib "$small_bytes" "$peer_files_us")" \
  "$(ratio "$peer_files_us" "$(median "$work/measure/curl-small" 1)")" "(none)" "$(awk -v k="$(maxcol "$work/measure/http-client-peer-files" 2)" 'BEGIN{printf "%.1f", k/1024}')"
small_fu=$(median "$work/measure/ferry-small" 1)
small_cu=$(median "$work/measure/curl-small" 1)
printf '%-28s %12s %12s   (files/s)\n' "" \
  "$(awk -v n="$SMALL_COUNT" -v us="$small_cu" 'BEGIN{printf "%.0f", n/(us/1e6)}')" \
  "$(awk -v n="$SMALL_COUNT" -v us="$small_fu" 'BEGIN{printf "%.0f", n/(us/1e6)}')"
peak=$(cat "$work"/measure/ferry-* 2>/dev/null | awk '$2>m{m=$2} END{print m+0}')
printf '\nferry peak RSS over all runs: %.1f MiB (target < 64 MiB: %s)\n' \
  "$(awk -v k="$peak" 'BEGIN{print k/1024}')" "$(awk -v k="$peak" 'BEGIN{print (k < 65536 ? "ok" : "MISSED")}')"
printf 'raw (microseconds, RSS KiB) in %s/measure when KEEP=1\n' "$work"
