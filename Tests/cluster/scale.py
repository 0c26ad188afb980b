#!/usr/bin/python3
"""Clusters of 3, 8 and 16 real nodes in a namespace: how long until every node holds a burst of
writes, the CPU each node spends per replicated update, and each node's sockets and memory.

    sudo /usr/bin/python3 Tests/cluster/scale.py [--binary PATH] [--sizes 3,8,16] [--burst 1000]

Every node names node1 as its only seed (the rest is gossip). The burst is one `import` of
BURST keys on node1 (one commit, BURST published updates). Prints a Markdown table (the one in
docs/performance.md). faults.py runs the same measurement as its `scale` scenario.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Cluster, check_bulk  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def resident_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def sockets(pid):
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def measure(binary, size, burst=1000, log=print):
    """Returns a dict of figures for a cluster of `size` nodes."""
    with Cluster(binary, size, f"scale{size}", seeds=lambda k: [1] if k != 1 else []) as c:
        t = time.monotonic()
        c.start_all(wait_alive=False)
        c.wait_all_alive(timeout=60)
        formed = time.monotonic() - t
        pids = {k: c.nodes[k].process.pid for k in c.nodes}
        # Idle CPU first (heartbeats, timers), to subtract from the burst's.
        idle_start = {k: cpu_seconds(p) for k, p in pids.items()}
        time.sleep(3.0)
        idle_rate = {k: (cpu_seconds(p) - idle_start[k]) / 3.0 for k, p in pids.items()}
        before = {k: cpu_seconds(p) for k, p in pids.items()}
        expected = {f"burst-{i:05d}": {"n": i, "pad": "x" * 60} for i in range(burst)}
        started = time.monotonic()
        c.import_keys(1, expected.items())
        seconds, _, _ = c.wait_converged(started, timeout=60)
        if seconds is None:
            raise RuntimeError(f"{size} nodes did not converge on the burst within 60 s")
        elapsed = time.monotonic() - started
        after = {k: cpu_seconds(p) for k, p in pids.items()}
        problems = check_bulk(c, "burst-", expected)
        if problems:
            raise RuntimeError("; ".join(problems[:3]))
        # The writer's CPU includes committing the import; the others' is replication alone.
        others = [k for k in pids if k != 1]
        per_update = [max(0.0, after[k] - before[k] - idle_rate[k] * elapsed) / burst for k in others]
        figures = {
            "nodes": size,
            "formed_s": formed,
            "burst_everywhere_s": seconds,
            "cpu_us_per_update": 1e6 * sum(per_update) / len(per_update),
            "idle_cpu_percent": 100 * sum(idle_rate.values()) / len(idle_rate),
            "sockets": sum(sockets(p) for p in pids.values()) / len(pids),
            "rss_mb": sum(resident_mb(p) for p in pids.values()) / len(pids),
        }
        log(f"{size} nodes: formed in {formed:.2f} s; every node held the {burst}-key burst {seconds:.2f} s after the "
            f"import started; {figures['cpu_us_per_update']:.0f} us CPU per replicated update per node; "
            f"idle {figures['idle_cpu_percent']:.1f} % CPU; {figures['sockets']:.0f} sockets and {figures['rss_mb']:.0f} MB per node")
        return figures


def table(rows, burst):
    lines = [f"| nodes | cluster formed (all alive) | every node holds a {burst:,}-key burst | CPU per replicated update per node | idle CPU per node | sockets per node | RSS per node |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['nodes']} | {r['formed_s']:.2f} s | {r['burst_everywhere_s']:.2f} s | {r['cpu_us_per_update']:.0f} us | "
                     f"{r['idle_cpu_percent']:.1f} % | {r['sockets']:.0f} | {r['rss_mb']:.0f} MB |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(os.path.dirname(__file__), "..", "..", ".build", "release", "replica-node"))
    parser.add_argument("--sizes", default="3,8,16")
    parser.add_argument("--burst", type=int, default=1000)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("scale.py needs root (network namespaces)")
        return 1
    rows = [measure(os.path.abspath(args.binary), int(size), args.burst) for size in args.sizes.split(",")]
    print()
    print(table(rows, args.burst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
