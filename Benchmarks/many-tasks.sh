#!/usr/bin/env bash
# Every task handed to a session at once (URLSession code's usual loop of resume() calls),
# against curl fetching the same files: wall time, CPU, peak memory, and the memory a waiting
# task holds. COUNT files of 1 KiB from nginx on loopback, 6 connections each side.
# Release build; the app is Benchmarks/ManyTasks (URLSession's spelling).
#
# Usage: Benchmarks/many-tasks.sh                    (COUNTS="1000 4000 16000", RUNS=3)
#        COUNTS=2000 RUNS=1 Benchmarks/many-tasks.sh (a quick look)
# Environment: FERRY_SCRATCH (SwiftPM scratch path, default .build-release), BENCH_TMP (work
# folder, default /dev/shm: the files' own churn stays out of the figures).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
source Benchmarks/nginx.sh
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || scripts/install-deps
command -v curl >/dev/null 2>&1 || scripts/install-deps
scratch=${FERRY_SCRATCH:-.build-release}
counts=${COUNTS:-"1000 4000 16000"}
printf 'building ManyTasks (release, %s)…\n' "$scratch" >&2
swift build -c release --product ManyTasks --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

work=$(mktemp -d "${BENCH_TMP:-/dev/shm}/many-tasks.XXXXXX")
nginx_pid=""
cleanup() { stop_pid "$nginx_pid"; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work"/{www/upload,www/t,logs,temp,tmp,out}
chmod 777 "$work/www/upload" "$work/temp"
largest=0
for count in $counts; do [ "$count" -gt "$largest" ] && largest=$count; done
(cd "$work/www/t" && head -c $((largest * 1024)) /dev/urandom | split -b 1024 -d -a 6 - f)
start_nginx "$work"

# One run: wall and CPU seconds, peak RSS in MiB, as "wall cpu rss".
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >"$work/stdout" 2>"$work/stderr" || {
    printf 'failed: %s\n' "$*" >&2; cat "$work/stderr" >&2; exit 1; }
  awk '{ printf "%.3f %.3f %.1f\n", $1, $2 + $3, $4 / 1024 }' "$work/time"
}

printf '%-6s %-10s %8s %8s %10s  %s\n' count client wall cpu "peak RSS" "ManyTasks: RSS before, once all were resumed, at the end; the peak's growth a task"
for count in $counts; do
  ls "$work/www/t" | sed -n "1,${count}s#^#$nginx_url/t/#p" >"$work/list"
  : >"$work/curl.cfg"
  while read -r url; do printf 'url = "%s"\noutput = "%s/out/%s"\n' "$url" "$work" "${url##*/}" >>"$work/curl.cfg"; done <"$work/list"
  for run in $(seq 1 "${RUNS:-3}"); do
    rm -rf "$work/out" && mkdir "$work/out"
    read -r wall cpu rss < <(measure curl -s --parallel --parallel-max 6 -K "$work/curl.cfg")
    saved=$(ls "$work/out" | wc -l)
    [ "$saved" -eq "$count" ] || { printf 'curl saved %s of %s files\n' "$saved" "$count" >&2; exit 1; }
    printf '%-6s %-10s %7ss %7ss %7s MiB\n' "$count" curl "$wall" "$cpu" "$rss"
    read -r wall cpu rss < <(TMPDIR="$work/tmp" measure "$bin/ManyTasks" "$work/list")
    line=$(cat "$work/stdout")
    case "$line" in *" failed 0 "*) ;; *) printf 'ManyTasks: %s\n' "$line" >&2; exit 1 ;; esac
    field() { sed -E "s/.*$1 ([0-9.]+) MiB.*/\\1/" <<<"$line"; }
    before=$(field rss-before); resumed=$(field rss-resumed); after=$(field rss-after); peak=$(field rss-peak)
    printf '%-6s %-10s %7ss %7ss %7s MiB  %s, %s, %s MiB; %s KiB\n' "$count" ManyTasks "$wall" "$cpu" "$rss" "$before" "$resumed" "$after" \
      "$(awk -v b="$before" -v p="$peak" -v c="$count" 'BEGIN { printf "%.1f", (p - b) * 1024 / c }')"
  done
done
