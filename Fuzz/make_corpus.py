#!/usr/bin/env python3
"""Writes the seed corpus for WireFuzz from docs/protocol.md's layouts (big-endian).

Run from the repository root: python3 Fuzz/make_corpus.py. The files are committed; this
script documents how they were made and keeps them in step with the protocol."""
import os, struct, uuid

out = os.path.join(os.path.dirname(__file__), "corpus")
os.makedirs(out, exist_ok=True)

def node(name): return bytes([len(name)]) + name.encode()
def header(kind, origin): return b"R\x02" + bytes([kind]) + node(origin)
def mark(epoch, serial): return struct.pack(">QQ", epoch, serial)
def record(name, epoch, status, host, port, key=b""):
    return node(name) + struct.pack(">Q", epoch) + uuid.UUID(int=epoch).bytes + bytes([status]) + bytes([len(host)]) + host.encode() + struct.pack(">H", port) + bytes([len(key)]) + key
def report(name, epoch, through, echo, held, direct): return node(name) + struct.pack(">QQQIB", epoch, through, echo, held, 1 if direct else 0)
def entry(hlc, writer, key, payload, schema=0):
    body = struct.pack(">Q", hlc) + node(writer)
    body += bytes([0 if payload is not None else 1]) + struct.pack(">H", schema)
    body += struct.pack(">H", len(key.encode())) + key.encode()
    if payload is not None: body += struct.pack(">I", len(payload)) + payload
    return body

def batched(hlc, key, payload, schema=0):
    """An entry in a batch (kind 8): as `entry`, without the writer (the origin wrote them all)."""
    body = struct.pack(">Q", hlc) + bytes([0 if payload is not None else 1]) + struct.pack(">H", schema)
    body += struct.pack(">H", len(key.encode())) + key.encode()
    if payload is not None: body += struct.pack(">I", len(payload)) + payload
    return body

hlc = (1763800000000 << 16) | 3
seeds = {
    "update-value": header(1, "node1") + struct.pack(">Q", 42) + entry(hlc, "node1", "greeting", b'"hi"', 2),
    "update-tombstone": header(1, "node1") + struct.pack(">Q", 43) + entry(hlc, "node1", "gone", None),
    "heartbeat": header(2, "node2") + uuid.UUID(int=7).bytes + struct.pack(">QQQQQQQQH", 1763800000000, 9, hlc, 1763800000123, 0xDEADBEEF, 12, 0xABCD, 40, 2)
        + report("node1", 1763700000000, 9, 1763800000100, 20, True) + report("node3", 0, 0, 0, 0, False),
    "sync-request": header(3, "node3") + struct.pack(">Q", 7) + mark(1763800000000, 12) + struct.pack(">H", 1024) + b"".join(struct.pack(">Q", i * 31) for i in range(1024)),
    "repair-request": header(5, "node2") + struct.pack(">QQQ", 9, 100, 4195),
    "sync-chunk-unavailable": header(4, "node1") + struct.pack(">QIB", 8, 0, 3) + mark(0, 0) + struct.pack(">QH", 0, 0),
    "sync-chunk": header(4, "node1") + struct.pack(">QIB", 7, 2, 1) + mark(1763800000000, 40) + struct.pack(">QH", 17, 2) + entry(hlc, "node1", "a", b"\x01\x02") + entry(hlc, "node2", "b", None),
    "members-join": header(6, "node4") + bytes([1]) + struct.pack(">H", 2) + record("node4", 1763800000000, 1, "10.0.0.4", 7000) + record("node1", 1763700000000, 2, "node1", 7000, bytes(range(32))),
    "members-announce": header(6, "node1") + bytes([0]) + struct.pack(">H", 1) + record("node9", 5, 3, "127.0.1.9", 7100),
    "beacon": b"RPLB\x02" + node("node5") + struct.pack(">H", 7000) + bytes([8]) + b"10.0.0.5" + bytes([32]) + bytes(range(32)),
    "relay": header(7, "node2") + node("node1") + struct.pack(">QQ", 1763700000000, 77) + entry(hlc, "node1", "greeting", b'"hi"'),
    "updates-batch": header(8, "node1") + struct.pack(">QH", 45, 3) + batched(hlc, "greeting", b'"hi"', 2) + batched(hlc, "gone", None)
        + batched(hlc + 1, "ü-ключ", b""),
}
# Numbers at their edges (docs/protocol.md, "Limits"): the largest epoch and sequence a message
# may carry, and one past each, which the codec refuses.
E48, S53, MAX = (1 << 48) - 1, (1 << 53) - 1, (1 << 64) - 1
seeds.update({
    "heartbeat-edges": header(2, "node2") + uuid.UUID(int=7).bytes + struct.pack(">QQQQQQQQH", E48, S53, MAX, E48, MAX, MAX, MAX, MAX, 3)
        + report("node1", E48, S53, E48, (1 << 32) - 1, True) + report("node2", 0, 0, 0, 0, False) + report("node3", 1, 1 << 31, 1, 0, True),
    "heartbeat-refused": header(2, "node2") + uuid.UUID(int=7).bytes + struct.pack(">QQQQQQQQH", E48 + 1, MAX, MAX, E48, 0, 0, 0, 0, 1)
        + report("node1", MAX, MAX, E48, 0, True),
    "members-edges": header(6, "node1") + bytes([1]) + struct.pack(">H", 4) + record("node2", E48, 3, "127.0.0.2", 1)
        + record("node2", 0, 1, "127.0.0.1", 65534) + record("node3", 1 << 31, 2, "h", 7000) + record("node1", E48 - 1, 1, "::1", 7000),
    "update-edge": header(1, "node1") + struct.pack(">Q", S53) + entry(hlc, "node1", "k", b"1"),
    "updates-batch-edge": header(8, "node1") + struct.pack(">QH", S53 - 1, 2) + batched(hlc, "a", b"1") + batched(hlc, "b", None),
    "relay-edge": header(7, "node2") + node("node1") + struct.pack(">QQ", E48, S53) + entry(hlc, "node1", "k", b"1"),
    "sync-chunk-edge": header(4, "node1") + struct.pack(">QIB", MAX, (1 << 32) - 1, 1) + mark(E48, MAX) + struct.pack(">QH", S53, 0),
    "repair-request-edge": header(5, "node2") + struct.pack(">QQQ", MAX, 1, S53),
})
for name, body in seeds.items():
    with open(os.path.join(out, name), "wb") as f: f.write(body)
    # The same message as sent on PUB/SUB: its topic, then its body, in one frame.
    topic = {"update-value": b"u", "update-tombstone": b"u", "heartbeat": b"h", "members-announce": b"m", "relay": b"rnode1\x00", "updates-batch": b"u",
             "heartbeat-edges": b"h", "members-edges": b"m", "update-edge": b"u", "updates-batch-edge": b"u", "relay-edge": b"rnode1\x00"}.get(name)
    if topic:
        with open(os.path.join(out, name + "-published"), "wb") as f: f.write(topic + body)
print(f"wrote {len(os.listdir(out))} seeds to {out}")
