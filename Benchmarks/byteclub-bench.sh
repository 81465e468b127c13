#!/usr/bin/env bash
# byteclub-server vs nginx on loopback, curl as the client of both (issue 3, "Proof"):
#   (a) upload of one large file    curl -T FILE  → nginx (WebDAV PUT)  vs  → byteclub-server /1/files_put
#   (b) download of the same file   curl -o FILE  ← nginx               vs  ← byteclub-server /1/files
#   (c) byteclub-server's peak RSS (VmHWM in /proc/PID/status) for each file size: a fresh
#       server per size, so the peak of the small size and of the big size can be compared
#       (invariant 5: memory does not grow with file size).
# Each transfer runs RUNS times per size (nginx and byteclub-server alternating, every byte
# compared on the first run); the table shows medians and byteclub/nginx rate ratios.
# Not the same work: byteclub-server fsyncs an upload before answering (durable before
# acknowledged) and writes a metadata row; nginx's WebDAV PUT does neither.
#
# Usage: Benchmarks/byteclub-bench.sh                    (256 MiB and 1 GiB, 3 runs)
#        SIZES_MIB="64 256" RUNS=1 Benchmarks/byteclub-bench.sh   (a quick look)
# Environment: BENCH_TMP (where the work dir goes; default /var/tmp, a disk, not tmpfs),
#              BYTECLUB_SCRATCH (SwiftPM scratch path of the release build; default .build-bc-release),
#              BYTECLUB_SERVER (use this binary instead of building one), KEEP=1 keeps the work dir.
set -euo pipefail

RUNS=${RUNS:-3}
SIZES_MIB=${SIZES_MIB:-"256 1024"}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"

say() { printf '%s\n' "$*" >&2; }

# Tools: nginx and curl come from Debian through the project's script.
if ! command -v nginx >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
  scripts/install-deps
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)  # for its version in the table

# byteclub-server in release.
if [ -n "${BYTECLUB_SERVER:-}" ]; then
  SERVER=$BYTECLUB_SERVER
else
  scratch=${BYTECLUB_SCRATCH:-.build-bc-release}
  say "building byteclub-server (release, $scratch)…"
  swift build -c release --product byteclub-server --scratch-path "$scratch" >&2
  SERVER="$(swift build -c release --product byteclub-server --scratch-path "$scratch" --show-bin-path)/byteclub-server"
fi
[ -x "$SERVER" ] || { say "no byteclub-server binary at $SERVER"; exit 1; }

base=${BENCH_TMP:-/var/tmp}
work=$(mktemp -d "$base/byteclub-bench.XXXXXX")
nginx_pid=""
server_pid=""
. "$here/Benchmarks/nginx.sh"
cleanup() {
  stop_pid "$server_pid"
  stop_pid "$nginx_pid"
  if [ "${KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
chmod 755 "$work"
mkdir -p "$work"/{www/upload,out,logs,temp,measure}
chmod 777 "$work/www/upload" "$work/temp"

start_nginx "$work"

TOKEN=bench-token
# start_server: a fresh byteclub-server (new data directory, port 0); sets server_pid and bc_url.
start_server() {
  rm -rf "$work/bc"
  : >"$work/logs/bc-stdout.log"
  "$SERVER" --port 0 --data-dir "$work/bc" --dev-access-token "$TOKEN" --log-level warning \
    >"$work/logs/bc-stdout.log" 2>"$work/logs/bc-stderr.log" &
  server_pid=$!
  bc_url=""
  for _ in $(seq 300); do
    bc_url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$work/logs/bc-stdout.log")
    [ -n "$bc_url" ] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$bc_url" ] || { say "byteclub-server did not start:"; cat "$work/logs/bc-"*.log >&2; exit 1; }
}
hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status"; }

# measure NAME CMD…: runs CMD, appends its microseconds to measure/NAME.
measure() {
  local name=$1
  shift
  sync
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$work/measure/$name.out" 2>"$work/measure/$name.err" || {
    say "FAILED: $name: $*"
    cat "$work/measure/$name.err" >&2
    exit 1
  }
  t1=$(date +%s%N)
  echo "$(((t1 - t0) / 1000))" >>"$work/measure/$name"
}
median() { sort -n "$1" | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
check_same() { cmp -s "$1" "$2" || { say "MISMATCH: $2 differs from $1"; exit 1; }; }
auth=(-H "Authorization: Bearer $TOKEN")

for mib in $SIZES_MIB; do
  say "size $mib MiB: making the file, starting a fresh byteclub-server…"
  src="$work/src-$mib.bin"
  head -c $((mib << 20)) /dev/urandom >"$src"
  start_server
  echo "$(rss_kib) $(hwm_kib)" >"$work/measure/idle-$mib"
  for run in $(seq "$RUNS"); do
    order="nginx byteclub"; [ $((run % 2)) -eq 0 ] && order="byteclub nginx"
    say "size $mib MiB, run $run/$RUNS: upload, then download ($order)"
    for who in $order; do
      if [ "$who" = nginx ]; then
        rm -f "$work/www/upload/"*
        measure "nginx-up-$mib" curl -sS --fail -T "$src" "$nginx_url/upload/big.bin"
        if [ "$run" -eq 1 ]; then check_same "$src" "$work/www/upload/big.bin"; fi
      else
        # A new name per run, as nginx's upload folder is emptied before each of its runs: an
        # overwrite would make byteclub-server also delete the old 1 GiB blob inside the request.
        measure "bc-up-$mib" curl -sS --fail -T "$src" "${auth[@]}" "$bc_url/1/files_put/dropbox/big-$run.bin"
      fi
    done
    # The floor for a durable upload on this disk: the same bytes written and fsynced by dd.
    measure "dd-$mib" dd if="$src" of="$work/out/dd.bin" bs=1M conv=fsync status=none
    rm -f "$work/out/dd.bin"
    for who in $order; do
      rm -f "$work/out/big.bin"
      if [ "$who" = nginx ]; then
        measure "nginx-down-$mib" curl -sS --fail -o "$work/out/big.bin" "$nginx_url/upload/big.bin"
      else
        measure "bc-down-$mib" curl -sS --fail -o "$work/out/big.bin" "${auth[@]}" "$bc_url/1/files/dropbox/big-$run.bin"
      fi
      if [ "$run" -eq 1 ]; then check_same "$src" "$work/out/big.bin"; fi
    done
  done
  echo "$(rss_kib) $(hwm_kib)" >"$work/measure/after-$mib"
  stop_pid "$server_pid"
  server_pid=""
  rm -f "$src" "$work/out/big.bin" "$work/www/upload/"*
  rm -rf "$work/bc"
done

# The table.
rate() { awk -v m="$1" -v us="$2" 'BEGIN { printf "%.0f", m / (us / 1e6) }'; }
ratio() { awk -v b="$1" -v n="$2" 'BEGIN { printf "%.2f", n / b }'; }   # byteclub rate / nginx rate = nginx time / byteclub time
mibk() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

printf '\nbyteclub-server vs nginx %s on loopback, %s as the client; %d runs each, medians; %s cores\n' \
  "$("$NGINX" -v 2>&1 | sed 's/.*nginx\///')" "$(curl --version | head -n1 | cut -d' ' -f1-2)" "$RUNS" "$(nproc)"
printf '%-20s %12s %14s %15s %16s %14s\n' "case" "nginx MiB/s" "byteclub MiB/s" "byteclub/nginx" "dd+fsync MiB/s" "byteclub/dd"
for mib in $SIZES_MIB; do
  for dir in up down; do
    n=$(median "$work/measure/nginx-$dir-$mib")
    b=$(median "$work/measure/bc-$dir-$mib")
    if [ "$dir" = up ]; then
      d=$(median "$work/measure/dd-$mib")
      printf '%-20s %12s %14s %15s %16s %14s\n' "upload $mib MiB" "$(rate "$mib" "$n")" "$(rate "$mib" "$b")" "$(ratio "$b" "$n")" \
        "$(rate "$mib" "$d")" "$(ratio "$b" "$d")"
    else
      printf '%-20s %12s %14s %15s\n' "download $mib MiB" "$(rate "$mib" "$n")" "$(rate "$mib" "$b")" "$(ratio "$b" "$n")"
    fi
  done
done
printf '(nginx keeps an upload in the page cache; byteclub-server fsyncs it before answering, as dd does)\n'
printf '\nbyteclub-server memory (a fresh server per size; VmHWM = peak RSS since it started)\n'
printf '%-10s %16s %20s\n' "size" "idle RSS MiB" "peak RSS MiB (HWM)"
peaks=()
for mib in $SIZES_MIB; do
  read -r idle_rss _ <"$work/measure/idle-$mib"
  read -r _ peak <"$work/measure/after-$mib"
  peaks+=("$peak")
  printf '%-10s %16s %20s\n' "$mib MiB" "$(mibk "$idle_rss")" "$(mibk "$peak")"
done
if [ ${#peaks[@]} -ge 2 ]; then
  sizes=($SIZES_MIB)
  first=${peaks[0]}
  last=${peaks[${#peaks[@]}-1]}
  grown=$((sizes[${#sizes[@]}-1] - sizes[0]))
  # Bodies held in memory would add about the size difference to the peak; allocator and
  # buffer noise between runs is some tens of MiB. Flat: under a tenth of the difference
  # (and under 64 MiB).
  awk -v a="$first" -v b="$last" -v g="$grown" 'BEGIN {
    d = (b - a) / 1024; limit = (g / 10 < 64 ? g / 10 : 64)
    printf "peak RSS, largest size minus smallest: %+.1f MiB while the file grew by %d MiB (%s)\n", d, g,
      (d < limit ? "flat: does not grow with file size" : "GROWS with file size")
  }'
fi
if [ "${KEEP:-0}" = 1 ]; then printf 'raw microseconds in %s/measure\n' "$work"; fi
exit 0
