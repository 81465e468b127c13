"""The Ferry protocol's framing for the benchmark clients (docs/protocol.md): a 4-byte
big-endian length, then one JSON message. Shared by ferryd_bench.py and ferryd_flood.py."""
import json, os, socket, struct


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
