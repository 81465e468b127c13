#!/usr/bin/env python3
"""ferryd at scale (issue 16, "Scale"), over its socket.

Usage: ferryd_scale.py FERRYD TEST_SERVER_URL
  HELD (default 100000): tasks enqueued and held (they begin in a day)
  BURST (default 1000): tasks that complete at about the same moment (each waits 1 s at the server)
  BURSTS (default 3): rounds of them, each printed, then their p99s side by side

Prints: enqueue rate for HELD tasks (pipelined, each answered after its commit); ferryd's RSS
idle, holding them, and after a restart; the restart's time until `status` is answered; paging
through all of them (`listTasks`, 500 a page) with ferryd's RSS after; and, for BURST tasks
completing together, how long each `completed` event took to reach this client: from ferryd
storing it (`storedAt`, its transaction's start: the disk sync is inside) and from its commit
(`committedAt`), and ferryd's own CPU for each round (its steadiest figure on shared cores);
beside them, the peer: one SQLite commit with its disk sync on the same disk.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ferry_wire
from ferry_wire import receive, request, send

ferryd, test_url = sys.argv[1:3]


def p99(seconds):
    """The 99th percentile of a list of durations (the largest for fewer than 100)."""
    seconds = sorted(seconds)
    return seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))] if seconds else float("nan")


def summary(seconds):
    """median, p99 and max of a list of durations, in ms."""
    if not seconds:
        return "none"
    seconds = sorted(seconds)
    return f"median {statistics.median(seconds) * 1000:.1f} ms, p99 {p99(seconds) * 1000:.1f} ms, max {seconds[-1] * 1000:.1f} ms"


def commit_times(folder, count=200):
    """The time of `count` one-row commits to a SQLite file in `folder`, synced as ferryd syncs."""
    import sqlite3
    path = os.path.join(folder, "commit-peer.sqlite")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("CREATE TABLE t (a INTEGER)")
    times = []
    for i in range(count):
        start = time.perf_counter()
        db.execute("BEGIN")
        db.execute("INSERT INTO t VALUES (?)", (i,))
        db.execute("COMMIT")
        times.append(time.perf_counter() - start)
    db.close()
    return times
HELD = int(os.environ.get("HELD", "100000"))
BURST = int(os.environ.get("BURST", "1000"))
BURSTS = int(os.environ.get("BURSTS", "3"))
root = tempfile.mkdtemp(prefix="ferryd-scale-", dir=os.environ.get("BENCH_TMP", "/var/tmp"))
env = dict(os.environ, FERRY_DATA_DIR=root + "/data", FERRY_RUNTIME_DIR=root + "/run", FERRYD_LOG_LEVEL="notice")
sock_path = root + "/run/ferryd.sock"


def connect():
    return ferry_wire.connect(sock_path, "ferryd-scale")


def start():
    """Starts ferryd (room for BURST tasks at once); the process and the seconds until `status` is answered."""
    return ferry_wire.start_ferryd([ferryd, "--global-task-limit", str(max(BURST, 16))], env, sock_path)


def stop(p):
    p.terminate()
    p.wait(timeout=60)


try:
    p, _ = start()
    time.sleep(1)
    idle = ferry_wire.rss_mib(p.pid)

    s = connect()
    request(s, 1, {"type": "attach", "sessionIdentifier": "scale.held", "owner": True})
    enqueue = ferry_wire.enqueue_held(s, "scale.held", HELD, test_url, in_flight=256)
    s.close()
    time.sleep(2)
    held = ferry_wire.rss_mib(p.pid)
    print(f"enqueue {HELD} tasks: {enqueue:.2f} s, {HELD / enqueue:.0f} tasks/s")

    stop(p)
    p, restart = start()
    after_restart = ferry_wire.rss_mib(p.pid)
    print(f"restart holding {HELD} tasks, until status is answered: {restart * 1000:.0f} ms")

    s = connect()
    t0 = time.monotonic()
    after, listed, rid = None, 0, 10
    while True:
        req = {"type": "listTasks", "sessionIdentifier": "scale.held"}
        if after is not None:
            req["afterTaskIdentifier"] = after
        page = request(s, rid, req)
        rid += 1
        listed += len(page["tasks"])
        after = page.get("nextAfterTaskIdentifier")
        if after is None:
            break
    paging = time.monotonic() - t0
    s.close()
    after_list = ferry_wire.rss_mib(p.pid)
    print(f"list all {listed} tasks in pages: {paging:.2f} s")
    print(f"ferryd RSS: idle {idle:.1f} MiB, holding {HELD} {held:.1f} MiB, after restart {after_restart:.1f} MiB, "
          f"after paging through them {after_list:.1f} MiB")

    # BURSTS rounds of BURST tasks, spread over sessions of 64 (the per-host limit's most), each
    # answered after 1 s: a p99 of one round is its 10th worst event, so one round says little.
    def burst(round):
        # ferryd's own CPU for the round (submissions, transfers, completions, events): steadier
        # than the p99 on shared cores, so a change in ferryd's work per task shows here first.
        cpu_before = ferry_wire.cpu_seconds(p.pid)
        s = connect()
        sessions = [f"scale.burst.{round}.{i}" for i in range((BURST + 63) // 64)]
        for i, name in enumerate(sessions):
            request(s, 100 + i, {"type": "attach", "sessionIdentifier": name, "owner": True, "httpMaximumConnectionsPerHost": 64})
        for i in range(BURST):
            send(s, {"type": "request", "requestID": 1000 + i, "request": {
                "type": "submit", "sessionIdentifier": sessions[i // 64], "kind": "data", "priority": 1,
                "request": {"url": f"{test_url}/delay/1000?n={i}", "method": "GET", "headers": []}}})
        latencies, committed, finished, failures = [], [], 0, 0
        # An event's kind is its stored JSON, which ends with its type: tested on the bytes, and
        # again once decoded.
        def ends_a_task(frame):
            return frame.startswith(b'{"type":"event"') and (b'"kind":{"type":"completed"}' in frame or b'"type":"failed"}' in frame)
        for arrived, m in ferry_wire.stamped_messages(s, ends_a_task, count=BURST, timeout=120):
            if m["type"] != "event" or m["kind"]["type"] not in ("completed", "failed"):
                continue
            finished += 1
            if m["kind"]["type"] == "failed":
                failures += 1
            if m.get("storedAt") is not None:
                latencies.append(arrived - m["storedAt"])
            if m.get("committedAt") is not None:
                committed.append(arrived - m["committedAt"])
        s.close()
        if finished < BURST:
            raise RuntimeError(f"only {finished} of {BURST} burst tasks finished within 120 s")
        cpu = ferry_wire.cpu_seconds(p.pid) - cpu_before
        print(f"{BURST} tasks completing together ({failures} failed): stored-to-client {summary(latencies)}; "
              f"committed-to-client ({len(committed)} sent as they committed) {summary(committed)}; "
              f"ferryd CPU {cpu * 1000:.0f} ms ({cpu / BURST * 1e6:.0f} us a task)")
        return p99(latencies), cpu

    rounds = [burst(round) for round in range(BURSTS)]
    print(f"stored-to-client p99 of each of the {BURSTS} rounds: " + ", ".join(f"{r * 1000:.1f} ms" for r, _ in rounds)
          + "; ferryd CPU: " + ", ".join(f"{c * 1000:.0f} ms" for _, c in rounds))
    # The peer: what one durable commit costs on this disk (SQLite, WAL, synchronous=FULL, as ferryd).
    print(f"one SQLite commit with its disk sync on this disk: {summary(commit_times(root))}")
    stop(p)
finally:
    shutil.rmtree(root, ignore_errors=True)
