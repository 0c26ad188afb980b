"""Disk scenarios for faults.py: node3's data directory sits on a small tmpfs that fills while
the cluster writes. Its commits fail and it says so (`commit` problem, failing `health`, `disk`
LOW) while the others go on acknowledging writes; once space is freed it commits again by
itself, fetches what it dropped, and nothing acknowledged is lost, nor anything refused kept."""

import errno
import json
import os
import subprocess
import time

from harness import Cluster, Workload, check_bulk, run

# The faults.py helpers, given by faults.py itself (it imports this module).
converge = wait_for = verify = writes_by_node = Failure = None
DEFAULT_BOUND = 10.0

# Big enough for a fresh store and a few seconds of register writes, small enough that the
# bulk import below (about 12 MB on node1) cannot fit once the filler took what was left.
TMPFS_SIZE = "48m"
BULK_KEYS = 20_000


def problem_kinds(status):
    return {p["kind"] for p in (status or {}).get("problems", [])}


def fill(path):
    """Writes zeros to `path` until the file system refuses (ENOSPC); returns the bytes written.
    Ends with 4 KiB writes, so what is left is less than a page."""
    written = 0
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 20, 4096):
            block = bytes(chunk)
            while True:
                try:
                    written += f.write(block)
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
    return written


def scenario_disk_full(ctx, binary):
    """node3's disk fills while all three write and node1 imports 20,000 keys: node3 lists a
    `commit` problem, its health fails and `disk` is LOW, node1 and node2 go on acknowledging;
    space freed, node3 commits again by itself, catches up, and the checker finds nothing
    acknowledged lost and no refused write stored anywhere."""
    with Cluster(binary, 3, "disk") as c:
        small = c.nodes[3].data
        run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", small])
        try:
            c.start_all()
            w = Workload(c, [f"d{i}" for i in range(6)], writers=3).start()
            time.sleep(1.0)
            filler = os.path.join(small, "filler")
            filled = fill(filler)
            full_at = time.monotonic()
            ctx.say(f"node3's {TMPFS_SIZE} tmpfs filled ({filled / 1048576:.1f} MiB of zeros)")

            pad = "x" * 500
            bulk = {f"bulk/{i:05d}": {"n": i, "pad": pad} for i in range(BULK_KEYS)}
            imported = c.import_keys(1, list(bulk.items()))
            ctx.say(f"imported {imported} keys of about 520 bytes on node1")

            listed = wait_for(lambda: "commit" in problem_kinds(c.status(3)), 30, step=0.2)
            if not listed:
                raise Failure(f"node3 lists no `commit` problem {time.monotonic() - full_at:.0f} s after its disk "
                              f"filled: {problem_kinds(c.status(3))}")
            status = c.status(3) or {}
            health = c.client(3, ["health"])
            disk = status.get("disk") or {}
            ctx.say(f"node3 lists `commit` {time.monotonic() - full_at:.1f} s after the fill; health exits "
                    f"{health.returncode}; disk {disk.get('freeBytes')} of {disk.get('totalBytes')} bytes free")
            if health.returncode != 1:
                raise Failure(f"node3's health exits {health.returncode} with a full disk")
            # And it stays so while the disk is full, small writes landing in SQLite's log meanwhile
            # (0.31.0 passed health between a small commit that fit and a large one that did not).
            polls, watched = 0, time.monotonic()
            while time.monotonic() - watched < 6.0:
                health = c.client(3, ["health"])
                polls += 1
                if health.returncode != 1:
                    raise Failure(f"node3's health exited {health.returncode} {time.monotonic() - full_at:.1f} s after its disk "
                                  f"filled (poll {polls}): {health.stdout.strip()}")
                time.sleep(0.2)
            ctx.say(f"node3's health exited 1 at each of {polls} polls over 6 s of writes with the disk full")
            text = c.client(3, ["status"]).stdout
            if "LOW" not in text:
                raise Failure("node3's status does not flag its disk LOW")

            # The others go on: writes acknowledged on node1 and node2 while node3's disk is full.
            before = sum(1 for op in w.ops if op.ok and op.node != 3)
            went_on = wait_for(lambda: sum(1 for op in w.ops if op.ok and op.node != 3) >= before + 20, 15, step=0.2)
            if not went_on:
                raise Failure("node1 and node2 stopped acknowledging writes while node3's disk was full")

            os.remove(filler)
            freed = time.monotonic()
            cleared = wait_for(lambda: "commit" not in problem_kinds(c.status(3)), 60, step=0.2)
            if not cleared:
                raise Failure(f"node3 still lists `commit` 60 s after space was freed: {c.log_tail(3)}")
            ctx.figures["recovery_s"] = time.monotonic() - freed
            ctx.say(f"space freed: node3's `commit` problem cleared {time.monotonic() - freed:.2f} s later, by itself")

            w.stop()
            stopped = time.monotonic()
            ctx.say(f"acknowledged writes per node: {writes_by_node(w)}")
            statuses = converge(ctx, c, stopped, DEFAULT_BOUND, what="the last write")
            if any(problem_kinds(s) & {"commit", "save"} for s in statuses.values()):
                raise Failure(f"problems left after recovery: { {k: problem_kinds(s) for k, s in statuses.items()} }")
            health = c.client(3, ["health"])
            if health.returncode != 0:
                raise Failure(f"node3's health exits {health.returncode} after recovery: {health.stdout.strip()}")
            verify(ctx, c, w)

            refused = [op for op in w.ops if not op.ok and op.error and op.error != "timeout"]
            reasons = sorted({op.error.split(":")[0] for op in refused})
            ctx.say(f"{len(refused)} writes refused (exit 1), by: {reasons}")
            stored = {}
            for key in w.keys:
                for k in c.nodes:
                    entry = c.get(k, key)
                    stored[(key, k)] = entry.get("value") if entry else None
            kept = [op for op in refused if any(stored[(op.key, k)] == op.value for k in c.nodes)]
            if kept:
                raise Failure(f"{len(kept)} refused writes are stored: {[(op.key, op.value, op.error) for op in kept[:5]]}")

            expected = {key: value for key, value in bulk.items()}
            problems = check_bulk(c, "bulk/", expected)
            if problems:
                raise Failure(f"bulk import after recovery: {problems[:5]}")
            ctx.say(f"all {BULK_KEYS} imported keys on every node; no refused write stored anywhere")
        finally:
            # Lazily: node3 may still hold its files open; the cluster stops it next.
            subprocess.run(["umount", "-l", small], capture_output=True)


SCENARIOS = [
    ("disk-full", scenario_disk_full),
]
