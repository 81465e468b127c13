"""The Ferry protocol's framing for the benchmark clients (docs/protocol.md): a 4-byte
big-endian length, then one JSON message. Shared by ferryd_bench.py, ferryd_scale.py and ferryd_flood.py, with their common steps
(starting ferryd, enqueueing held tasks)."""
import json, os, socket, struct, time


def frame(message):
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def send(s, message):
    s.sendall(frame(message))


def read_exactly(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise EOFError("ferryd closed the connection")
        data += chunk
    return data


def receive(s):
    (n,) = struct.unpack(">I", read_exactly(s, 4))
    return json.loads(read_exactly(s, n))


def stamped_messages(s, wanted_frame, count, timeout):
    """The first `count` messages whose frame `wanted_frame` (a test on the payload's bytes)
    accepts, as (arrival time, message): each stamped with the time.time() its last bytes were
    read from the socket; stops at `timeout` seconds. While reading it only splits frames;
    the JSON is decoded after the last read, so this client's decoding never delays the
    stamping of what arrives next (decoding as it read added up to several ms at the tail
    of 5,000 messages on two cores)."""
    import select
    deadline = time.monotonic() + timeout
    buffer, frames, found = b"", [], 0
    s.setblocking(False)
    try:
        while found < count and time.monotonic() < deadline:
            ready, _, _ = select.select([s], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = s.recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                break
            arrived = time.time()
            buffer += chunk
            at = 0
            while len(buffer) - at >= 4:
                (n,) = struct.unpack(">I", buffer[at:at + 4])
                if len(buffer) - at < 4 + n:
                    break
                frame = buffer[at + 4:at + 4 + n]
                at += 4 + n
                if wanted_frame(frame):
                    found += 1
                    frames.append((arrived, frame))
            buffer = buffer[at:]
    finally:
        s.setblocking(True)
    return [(arrived, json.loads(frame)) for arrived, frame in frames[:count]]


def connect(sock_path, client_name="ferry-bench"):
    """A connection past the handshake."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    send(s, {"type": "hello", "protocolVersion": 1, "clientName": client_name, "pid": os.getpid()})
    answer = receive(s)
    if answer["type"] != "welcome":
        s.close()
        raise RuntimeError(f"ferryd did not welcome us: {answer}")
    return s


def request(s, rid, req):
    """Sends one request and returns its reply, skipping events and other answers."""
    send(s, {"type": "request", "requestID": rid, "request": req})
    while True:
        m = receive(s)
        if m.get("requestID") == rid:
            if m["type"] != "reply":
                raise RuntimeError(f"{req['type']} failed: {m}")
            return m["reply"]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    """User + system CPU time the process has used, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_ferryd(argv, env, sock_path):
    """Starts ferryd; returns the process and the seconds until it answered `status`."""
    import subprocess, time
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    for _ in range(4000):
        try:
            s = connect(sock_path, "ferry-bench")
            request(s, 1, {"type": "status"})
            s.close()
            return p, time.monotonic() - t0
        except (OSError, EOFError):
            time.sleep(0.0025)
    raise RuntimeError("ferryd did not answer within 10 s")


def enqueue_held(s, session, count, url_base, in_flight=100):
    """Submits `count` downloads that begin in a day (so they stay queued), `in_flight` at a
    time on connection `s` (which owns `session`); each reply comes after ferryd's commit.
    Returns the seconds it took."""
    import time
    t0 = time.monotonic()
    rid, pending, done = 2, 0, 0
    while done < count:
        while pending < in_flight and rid - 2 < count:
            send(s, {"type": "request", "requestID": rid, "request": {
                "type": "submit", "sessionIdentifier": session, "kind": "download", "priority": 0.5,
                "earliestBeginDate": time.time() + 86400,
                "request": {"url": f"{url_base}/bytes/10?n={rid}", "method": "GET", "headers": []}}})
            rid += 1
            pending += 1
        m = receive(s)
        if m["type"] == "failure":
            raise RuntimeError(f"submit failed: {m}")
        if m["type"] == "reply":
            pending -= 1
            done += 1
    return time.monotonic() - t0
