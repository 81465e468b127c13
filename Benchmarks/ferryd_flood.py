#!/usr/bin/env python3
"""ferryd under abuse (issue 16, "Bounded everything"): what a hostile or broken local client
costs ferryd, and whether a well-behaved client on another connection keeps being served.

Usage: ferryd_flood.py FERRYD      (DURATION seconds per abuse, default 8; SETTLE, default 5)

One ferryd runs all the abuses in turn. For each, a sampler reads ferryd's RSS and CPU time
from /proc every 100 ms, and a probe on its own connection asks `status` every 50 ms (5 s
time-out). Printed per abuse: RSS before, peak during, 1 s and SETTLE s after the abuser
left; CPU seconds used during, and from 1 s to 2 s after (idle is ~0); the probe's worst
round trip and its failures; and what happened to the abuser (requests it got in, answers,
whether ferryd closed it).
"""
import os, shutil, socket, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ferry_wire
from ferry_wire import frame, receive, request

ferryd = sys.argv[1]
DURATION = float(os.environ.get("DURATION", "8"))
SETTLE = float(os.environ.get("SETTLE", "5"))
root = tempfile.mkdtemp(prefix="ferryd-flood-", dir=os.environ.get("BENCH_TMP", "/var/tmp"))
env = dict(os.environ, FERRY_DATA_DIR=root + "/data", FERRY_RUNTIME_DIR=root + "/run")
sock_path = root + "/run/ferryd.sock"

STATUS_BLOB = b"".join(frame({"type": "request", "requestID": i, "request": {"type": "status"}}) for i in range(1, 2001))


def start():
    p = subprocess.Popen([ferryd], env=env, stdout=subprocess.DEVNULL, stderr=open(root + "/ferryd.log", "wb"))
    for _ in range(2000):
        try:
            s = ferry_wire.connect(sock_path, "flood-start")
            request(s, 1, {"type": "status"})
            s.close()
            return p
        except (OSError, EOFError):
            time.sleep(0.005)
    raise RuntimeError("ferryd did not answer within 10 s")


class Sampler(threading.Thread):
    """ferryd's RSS and CPU every 100 ms, with timestamps."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.running = pid, [], True

    def run(self):
        while self.running:
            self.samples.append((time.monotonic(), ferry_wire.rss_mib(self.pid), ferry_wire.cpu_seconds(self.pid)))
            time.sleep(0.1)

    def at(self, t):
        return min(self.samples, key=lambda sample: abs(sample[0] - t))

    def peak(self, t0, t1):
        return max((s[1] for s in self.samples if t0 <= s[0] <= t1), default=0)


class Probe(threading.Thread):
    """A well-behaved client: `status` every 50 ms on its own connection."""

    def __init__(self):
        super().__init__(daemon=True)
        self.running, self.worst, self.failures, self.count = True, 0.0, 0, 0
        self.s = ferry_wire.connect(sock_path, "flood-probe")
        self.s.settimeout(5)

    def run(self):
        rid = 0
        while self.running:
            rid += 1
            t0 = time.monotonic()
            try:
                request(self.s, rid, {"type": "status"})
                self.worst = max(self.worst, time.monotonic() - t0)
                self.count += 1
            except (OSError, EOFError, RuntimeError):
                self.failures += 1
                self.s.close()
                try:
                    self.s = ferry_wire.connect(sock_path, "flood-probe")
                    self.s.settimeout(5)
                except (OSError, EOFError, RuntimeError):
                    pass
            time.sleep(0.05)


def writer(outcome, read_slowly=False):
    """Pipelines `status` requests as fast as ferryd takes them, for DURATION seconds;
    reads nothing, or 4 KiB every 10 ms."""
    s = ferry_wire.connect(sock_path, "flood-writer")
    s.settimeout(0.2)
    deadline = time.monotonic() + DURATION
    sent = answered = 0
    reader_done = threading.Event()

    def read():
        nonlocal answered
        while not reader_done.is_set():
            try:
                data = s.recv(4096)
                if not data:
                    outcome["closed by ferryd"] = True
                    return
                answered += len(data)
            except socket.timeout:
                pass
            except OSError:
                return
            time.sleep(0.01)

    reader = threading.Thread(target=read, daemon=True)
    if read_slowly:
        reader.start()
    while time.monotonic() < deadline:
        try:
            sent += s.send(STATUS_BLOB)
        except socket.timeout:
            continue
        except OSError:
            outcome["closed by ferryd"] = True
            break
    reader_done.set()
    if read_slowly:
        reader.join()
    s.close()
    outcome["requests sent"] = outcome.get("requests sent", 0) + sent * 2000 // len(STATUS_BLOB)
    outcome["answer bytes read"] = outcome.get("answer bytes read", 0) + answered


def never_reads(outcome):
    writer(outcome)


def reads_slowly(outcome):
    writer(outcome, read_slowly=True)


def two_writers(outcome):
    threads = [threading.Thread(target=writer, args=(outcome,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def malformed_frames(outcome):
    """New connections sending a frame of garbage, an oversized length, a zero length."""
    deadline = time.monotonic() + DURATION
    bad = [b"\x00\x00\x00\x05hello", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", frame({"type": "request"})]
    count = 0
    while time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(sock_path)
            s.sendall(bad[count % len(bad)])
            s.settimeout(1)
            s.recv(4096)
        except OSError:
            pass
        finally:
            s.close()
        count += 1
    outcome["bad frames sent"] = count


def idle_connections(outcome):
    """Opens connections that never say hello, as many as ferryd accepts (up to 1,000), and
    holds them for DURATION seconds."""
    held, refused = [], 0
    for _ in range(1000):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(0.5)
        try:
            s.connect(sock_path)
            held.append(s)
        except OSError:
            refused += 1
            s.close()
    time.sleep(DURATION)
    closed = 0
    for s in held:
        s.setblocking(False)
        try:
            while True:  # a refused or goodbye frame may come before the end of the stream
                if s.recv(65536) == b"":
                    closed += 1
                    break
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    outcome["connections opened"] = len(held)
    outcome["refused at connect"] = refused
    outcome[f"closed by ferryd within {DURATION:.0f} s"] = closed


ABUSES = [
    ("pipelines status, never reads", never_reads),
    ("pipelines status, reads 4 KiB per 10 ms", reads_slowly),
    ("two clients pipelining, never reading", two_writers),
    ("malformed frames, a new connection each", malformed_frames),
    ("connections that never say hello", idle_connections),
]


def main():
    p = start()
    sampler = Sampler(p.pid)
    sampler.start()
    time.sleep(1)
    print(f"ferryd idle: RSS {ferry_wire.rss_mib(p.pid):.1f} MiB; each abuse lasts {DURATION:.0f} s, then {SETTLE:.0f} s to settle")
    print("| abuse | RSS before | peak | +1 s | +%.0f s | CPU s during | CPU s from +1 s to +2 s | probe worst | probe failures | the abuser |" % SETTLE)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, abuse in ABUSES:
        probe = Probe()
        probe.start()
        time.sleep(0.5)
        t0 = time.monotonic()
        before = sampler.at(t0)
        outcome = {}
        abuse(outcome)
        t1 = time.monotonic()
        time.sleep(SETTLE)
        probe.running = False
        probe.join()
        after1, after2, settled = sampler.at(t1 + 1), sampler.at(t1 + 2), sampler.at(t1 + SETTLE)
        what = ", ".join(f"{k}: {v}" for k, v in outcome.items())
        print(f"| {name} | {before[1]:.1f} | {sampler.peak(t0, t1 + SETTLE):.1f} | {after1[1]:.1f} | {settled[1]:.1f} "
              f"| {after1[2] - before[2]:.2f} | {after2[2] - after1[2]:.2f} | {probe.worst * 1000:.0f} ms | {probe.failures} of {probe.count + probe.failures} | {what} |",
              flush=True)
        if p.poll() is not None:
            raise RuntimeError(f"ferryd exited with {p.returncode}; see {root}/ferryd.log")
    sampler.running = False
    p.terminate()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        print("ferryd did not stop within 30 s of SIGTERM; killed", flush=True)
        p.kill()
        p.wait()
    shutil.rmtree(root, ignore_errors=True)


main()
