#!/usr/bin/env python3
"""ferryd's figures (issue 4, "Benchmarks"), driven over its socket by a small protocol client.

Usage: ferryd_bench.py FERRYD NGINX_URL NGINX_ROOT TEST_SERVER_URL
  TASKS (default 10000), RUNS (default 3), BIG_MIB (default 1024), LATENCY_COUNT (default 200)

Prints one line per figure: enqueue rate, restart time holding TASKS tasks, RSS idle and with
TASKS queued, completion-to-event latency (median, p99), and a large background download
timed against `curl -o` run alternately (ratio curl time / ferryd time, median of RUNS).
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ferry_wire
from ferry_wire import receive, request, send

ferryd, nginx_url, nginx_root, test_url = sys.argv[1:5]
TASKS = int(os.environ.get("TASKS", "10000"))
RUNS = int(os.environ.get("RUNS", "3"))
BIG_MIB = int(os.environ.get("BIG_MIB", "1024"))
LATENCY_COUNT = int(os.environ.get("LATENCY_COUNT", "200"))
root = tempfile.mkdtemp(prefix="ferryd-bench-", dir=os.environ.get("BENCH_TMP", "/var/tmp"))
env = dict(os.environ, FERRY_DATA_DIR=root + "/data", FERRY_RUNTIME_DIR=root + "/run")
sock_path = root + "/run/ferryd.sock"


def connect():
    return ferry_wire.connect(sock_path, "ferryd-bench")


def start():
    """Starts ferryd; returns the process and the seconds until it answered `status`."""
    return ferry_wire.start_ferryd([ferryd], env, sock_path)


def rss_mib(p):
    return ferry_wire.rss_mib(p.pid)


def stop(p):
    p.terminate()
    p.wait(timeout=30)


p, _ = start()
time.sleep(1)
idle = rss_mib(p)

# Enqueue: TASKS downloads that wait a day (they stay queued), 100 submissions in flight;
# each reply comes after ferryd's commit.
s = connect()
request(s, 1, {"type": "attach", "sessionIdentifier": "bench.queue", "owner": True})
enqueue_seconds = ferry_wire.enqueue_held(s, "bench.queue", TASKS, test_url)
s.close()
time.sleep(1)
queued = rss_mib(p)
stop(p)
p, restart_seconds = start()
after_restart = rss_mib(p)
print(f"enqueue {TASKS} tasks: {enqueue_seconds:.2f} s, {TASKS / enqueue_seconds:.0f} tasks/s")
print(f"restart holding {TASKS} tasks, until status is answered: {restart_seconds * 1000:.0f} ms")
print(f"ferryd RSS: idle {idle:.1f} MiB, with {TASKS} queued {queued:.1f} MiB, after restart {after_restart:.1f} MiB")

# Latency: a tiny data task from submit to its `completed` event, one after another.
s = connect()
request(s, 1, {"type": "attach", "sessionIdentifier": "bench.latency", "owner": True})
latencies = []
for i in range(LATENCY_COUNT):
    t0 = time.monotonic()
    send(s, {"type": "request", "requestID": 10 + i, "request": {
        "type": "submit", "sessionIdentifier": "bench.latency", "kind": "data", "priority": 1,
        "request": {"url": f"{test_url}/bytes/2", "method": "GET", "headers": []}}})
    while True:
        m = receive(s)
        if m["type"] == "event" and m["kind"]["type"] in ("completed", "failed"):
            latencies.append(time.monotonic() - t0)
            send(s, {"type": "request", "requestID": 100000 + i, "request": {
                "type": "acknowledge", "sessionIdentifier": "bench.latency", "upToSequence": m["sequence"]}})
            break
latencies.sort()
p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
print(f"submit to completed event ({LATENCY_COUNT} tiny tasks in a row): median {statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")

# A big background download against curl, alternating.
big = os.path.join(nginx_root, "ferryd-bench.bin")
if not os.path.exists(big) or os.path.getsize(big) != BIG_MIB << 20:
    subprocess.run(["head", "-c", str(BIG_MIB << 20), "/dev/urandom"], stdout=open(big, "wb"), check=True)
request(s, 2, {"type": "attach", "sessionIdentifier": "bench.big", "owner": True})
ratios = []
for run in range(RUNS):
    t0 = time.monotonic()
    request(s, 20000 + run, {"type": "submit", "sessionIdentifier": "bench.big", "kind": "download", "priority": 0.5,
                             "request": {"url": f"{nginx_url}/ferryd-bench.bin", "method": "GET", "headers": []}})
    while True:
        m = receive(s)
        if m["type"] == "event" and m["sessionIdentifier"] == "bench.big" and m["kind"]["type"] in ("completed", "failed"):
            break
    ferryd_seconds = time.monotonic() - t0
    assert m["kind"]["type"] == "completed", m
    send(s, {"type": "request", "requestID": 30000 + run, "request": {
        "type": "acknowledge", "sessionIdentifier": "bench.big", "upToSequence": m["sequence"]}})
    t1 = time.monotonic()
    subprocess.run(["curl", "-s", "-o", root + "/curl.bin", f"{nginx_url}/ferryd-bench.bin"], check=True)
    curl_seconds = time.monotonic() - t1
    os.remove(root + "/curl.bin")
    ratios.append(curl_seconds / ferryd_seconds)
    print(f"  run {run + 1}: ferryd {BIG_MIB / ferryd_seconds:.0f} MiB/s, curl {BIG_MIB / curl_seconds:.0f} MiB/s")
print(f"{BIG_MIB} MiB background download vs curl: ratio (curl time / ferryd time) median {statistics.median(ratios):.2f} "
      f"(runs: {', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.9)")
s.close()
stop(p)
shutil.rmtree(root, ignore_errors=True)
