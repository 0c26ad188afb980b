#!/usr/bin/env python3
"""Writes the seed corpus for WireFuzz from docs/protocol.md's layouts (big-endian).

Run from the repository root: python3 Fuzz/make_corpus.py. The files are committed; this
script documents how they were made and keeps them in step with the protocol."""
import os, struct, uuid

out = os.path.join(os.path.dirname(__file__), "corpus")
os.makedirs(out, exist_ok=True)

def node(name): return bytes([len(name)]) + name.encode()
def header(kind, origin): return b"R\x01" + bytes([kind]) + node(origin)
def entry(hlc, writer, key, payload, schema=0):
    body = struct.pack(">Q", hlc) + node(writer)
    body += bytes([0 if payload is not None else 1]) + struct.pack(">H", schema)
    body += struct.pack(">H", len(key.encode())) + key.encode()
    if payload is not None: body += struct.pack(">I", len(payload)) + payload
    return body

hlc = (1763800000000 << 16) | 3
seeds = {
    "update-value": header(1, "node1") + struct.pack(">Q", 42) + entry(hlc, "node1", "greeting", b'"hi"', 2),
    "update-tombstone": header(1, "node1") + struct.pack(">Q", 43) + entry(hlc, "node1", "gone", None),
    "heartbeat": header(2, "node2") + uuid.UUID(int=7).bytes + struct.pack(">QQQQ", 9, hlc, 0xDEADBEEF, 12),
    "sync-request": header(3, "node3") + struct.pack(">QH", 7, 1024) + b"".join(struct.pack(">Q", i * 31) for i in range(1024)),
    "repair-request": header(5, "node2") + struct.pack(">QQQ", 9, 100, 4195),
    "sync-chunk-unavailable": header(4, "node1") + struct.pack(">QIBH", 8, 0, 3, 0),
    "sync-chunk": header(4, "node1") + struct.pack(">QIBH", 7, 2, 1, 2) + entry(hlc, "node1", "a", b"\x01\x02") + entry(hlc, "node2", "b", None),
}
for name, body in seeds.items():
    with open(os.path.join(out, name), "wb") as f: f.write(body)
    # The same message as PUB/SUB frames: cut byte, topic, body.
    if name.startswith("update"):
        key = b"greeting" if name == "update-value" else b"gone"
        topic = b"u" + key
        with open(os.path.join(out, name + "-frames"), "wb") as f: f.write(bytes([len(topic)]) + topic + body)
    if name == "heartbeat":
        with open(os.path.join(out, name + "-frames"), "wb") as f: f.write(b"\x01h" + body)
print(f"wrote {len(os.listdir(out))} seeds to {out}")
