#!/usr/bin/python3
"""Fault tests for Replica: partitions, one-way partitions, packet loss, late joiners, kill -9,
SIGSTOP and 10,000 divergent keys, each checked Jepsen style after heal.

    sudo /usr/bin/python3 Tests/cluster/faults.py [--binary PATH] [--only NAME[,NAME]] [--list]

Each scenario starts its own 3-node cluster inside a private network namespace (see
harness.py), injects faults with iptables / signals while client threads write, heals, waits
(polling `status --json`, with a deadline) until every node reports the same digest, and then
checks that no acknowledged write was lost. The output ends with `N passed, N failed`; the exit
code is 0 only if every scenario passed. Without root, `ip netns` or iptables the scenarios are
skipped with a printed reason and the exit code is 0.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Cluster, Workload, check_bulk, check_register  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Convergence bounds (seconds from heal to equal digests on every node).
DEFAULT_BOUND = 10.0
DIVERGENT_BOUND = 2.0   # the goal for 10,000 divergent keys


class Failure(Exception):
    pass


class Context:
    """What a scenario reports: detail lines and measured figures."""

    def __init__(self, name):
        self.name = name
        self.details = []
        self.figures = {}

    def say(self, text):
        self.details.append(text)
        print(f"  {text}", flush=True)


def converge(ctx, cluster, since, bound, what="heal", ks=None):
    seconds, statuses, alive = cluster.wait_converged(since, timeout=max(30.0, bound * 3), ks=ks)
    if seconds is None:
        digests = {k: (s["digest"], s["entryCount"]) if s else None for k, s in (statuses or {}).items()}
        raise Failure(f"no convergence within {max(30.0, bound * 3):.0f} s of {what}: {digests}")
    ctx.figures["convergence_s"] = seconds
    alive_text = f"all peers alive at {alive:.2f} s, " if alive is not None else ""
    ctx.say(f"converged {seconds:.2f} s after {what} ({alive_text}bound {bound:.1f} s)")
    for k, s in statuses.items():
        if s["loadErrors"] or s["saveErrors"]:
            raise Failure(f"node{k} reports errors: load {s['loadErrors']} save {s['saveErrors']}")
    if seconds > bound:
        raise Failure(f"converged after {seconds:.2f} s, beyond the {bound:.1f} s bound")
    return statuses


def verify(ctx, cluster, workload):
    ctx.say(workload.summary())
    acked = [op for op in workload.ops if op.ok]
    if not acked:
        raise Failure("no write was acknowledged; the workload tested nothing")
    problems = check_register(cluster, workload.ops, workload.keys)
    for p in problems[:20]:
        ctx.say(p)
    if problems:
        raise Failure(f"{len(problems)} checker violation(s)")
    ctx.say(f"checker: {len(workload.keys)} keys x {len(cluster.nodes)} nodes hold the LWW winner; "
            f"no acknowledged write lost")


def writes_by_node(workload):
    counts = {}
    for op in workload.ops:
        if op.ok:
            counts[op.node] = counts.get(op.node, 0) + 1
    return ", ".join(f"node{k}: {n}" for k, n in sorted(counts.items()))


def wait_for(predicate, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def peer_state(status, node_id):
    for p in (status or {}).get("peers", []):
        if p.get("id") == node_id:
            return p["state"]
    return None


def wait_seen_down(cluster, observers, target, timeout=10):
    """Waits until every observer sees node `target` down (the partition is established)."""
    target_id = cluster.nodes[target].id
    return wait_for(lambda: all(peer_state(s, target_id) == "down"
                                for s in cluster.statuses(observers).values()), timeout, step=0.1)


# ---- scenarios ------------------------------------------------------------------------------

def scenario_partition(ctx, binary):
    """Majority/minority partition {1,2} | {3}, writes on both sides, heal."""
    with Cluster(binary, 3, "partition") as c:
        c.start_all()
        w = Workload(c, [f"p{i}" for i in range(6)], writers=3).start()
        time.sleep(1.0)
        c.partition({1, 2}, {3})
        ctx.say("partitioned {node1,node2} | {node3}")
        if not wait_seen_down(c, [1, 2], 3):
            raise Failure("node3 was not seen down by the majority during the partition")
        time.sleep(1.0)
        w.stop()
        c.heal()
        healed = time.monotonic()
        ctx.say(f"healed; acknowledged writes per node: {writes_by_node(w)}")
        converge(ctx, c, healed, DEFAULT_BOUND)
        verify(ctx, c, w)


def scenario_one_way(ctx, binary):
    """node3 cannot send to node1 and node2 but receives from them; writes everywhere; heal."""
    with Cluster(binary, 3, "oneway") as c:
        c.start_all()
        w = Workload(c, [f"o{i}" for i in range(6)], writers=3).start()
        time.sleep(1.0)
        c.cut_one_way(3, 1)
        c.cut_one_way(3, 2)
        ctx.say("dropping every packet node3 -> node1 and node3 -> node2")
        if not wait_seen_down(c, [1, 2], 3):
            raise Failure("node3 was not seen down by node1/node2")
        time.sleep(1.0)
        w.stop()
        c.heal()
        healed = time.monotonic()
        ctx.say(f"healed; acknowledged writes per node: {writes_by_node(w)}")
        converge(ctx, c, healed, DEFAULT_BOUND)
        verify(ctx, c, w)


def scenario_packet_loss(ctx, binary):
    """30 % random loss on every link for 10 s while writing, then heal."""
    with Cluster(binary, 3, "loss") as c:
        c.start_all()
        w = Workload(c, [f"l{i}" for i in range(8)], writers=3).start()
        c.lossy(0.3)
        ctx.say("dropping 30 % of packets on every link for 10 s")
        time.sleep(10.0)
        w.stop()
        statuses = c.statuses()
        gaps = sum(p["sequenceGaps"] for s in statuses.values() if s for p in s["peers"])
        dropped = c.dropped_packets()
        c.heal()
        healed = time.monotonic()
        ctx.say(f"healed; {dropped} packets dropped, {gaps} sequence gaps detected; {writes_by_node(w)} acknowledged")
        if dropped == 0:
            raise Failure("the loss rules dropped nothing")
        converge(ctx, c, healed, DEFAULT_BOUND)
        verify(ctx, c, w)


def scenario_late_joiner(ctx, binary):
    """node1 and node2 hold 10,000 keys; node3 starts empty afterwards and catches up."""
    with Cluster(binary, 3, "late") as c:
        c.start(1, wait=False)
        c.start(2, wait=False)
        c.wait_ready(1)
        c.wait_ready(2)
        expected = {f"bulk-{i:05d}": {"n": i, "pad": "x" * 40} for i in range(10_000)}
        t = time.monotonic()
        written = c.import_keys(1, expected.items())
        ctx.say(f"imported {written} keys on node1 in {time.monotonic() - t:.2f} s")
        seconds, _, _ = c.wait_converged(t, timeout=30, ks=[1, 2])
        if seconds is None:
            raise Failure("node1 and node2 did not converge on the imported keys")
        ctx.say(f"node2 had them {seconds:.2f} s after the import started")
        started = time.monotonic()
        c.start(3, wait=False)
        converge(ctx, c, started, DEFAULT_BOUND, what="node3 was started (process start included)")
        problems = check_bulk(c, "bulk-", expected)
        if problems:
            raise Failure("; ".join(problems))
        ctx.say("all 10,000 keys present with their imported values on every node")


def scenario_kill_restart(ctx, binary):
    """kill -9 node2 during writes, keep writing, restart it on the same data dir."""
    with Cluster(binary, 3, "kill") as c:
        c.start_all()
        # Writers 0-1 write anywhere (writes to the dead node are indeterminate); writer 2 only
        # to node2, so some of its acknowledged writes are committed just before the kill.
        w = Workload(c, [f"k{i}" for i in range(6)], writers=3,
                     targets=lambda wid: [2] if wid == 2 else [1, 2, 3]).start()
        time.sleep(1.5)
        c.kill(2)
        ctx.say("kill -9 node2")
        time.sleep(3.0)
        c.start(2)
        ctx.say("restarted node2 on the same data directory")
        time.sleep(2.0)
        w.stop()
        stopped = time.monotonic()
        ctx.say(f"acknowledged writes per node: {writes_by_node(w)}")
        converge(ctx, c, stopped, DEFAULT_BOUND, what="the last write")
        verify(ctx, c, w)


def scenario_pause(ctx, binary):
    """SIGSTOP node3 for ~7 s: the others must see it suspect, then down; SIGCONT; converge."""
    with Cluster(binary, 3, "pause") as c:
        c.start_all()
        # Writer 2 also targets node3: its writes there block and time out (indeterminate), and
        # the node may still apply them when it resumes.
        w = Workload(c, [f"s{i}" for i in range(6)], writers=3, timeout=2.0,
                     targets=lambda wid: [1, 2, 3] if wid == 2 else [1, 2]).start()
        time.sleep(1.0)
        c.pause(3)
        paused = time.monotonic()
        ctx.say("SIGSTOP node3")
        seen = {1: [], 2: []}
        while time.monotonic() - paused < 7.0:
            for k, s in c.statuses([1, 2]).items():
                state = peer_state(s, "node3")
                if state and (not seen[k] or seen[k][-1][0] != state):
                    seen[k].append((state, time.monotonic() - paused))
            time.sleep(0.1)
        c.resume(3)
        resumed = time.monotonic()
        for k in (1, 2):
            ctx.say(f"node{k} saw node3: " + " -> ".join(f"{st} at {t:.1f} s" for st, t in seen[k]))
            states = [st for st, _ in seen[k]]
            if "suspect" not in states or "down" not in states or states.index("suspect") > states.index("down"):
                raise Failure(f"node{k} did not see node3 suspect then down: {states}")
        alive = wait_for(lambda: all(peer_state(s, "node3") == "alive" for s in c.statuses([1, 2]).values()), 10)
        if not alive:
            raise Failure("node3 not seen alive again within 10 s of SIGCONT")
        ctx.say(f"node3 alive again {time.monotonic() - resumed:.2f} s after SIGCONT (poll resolution included)")
        w.stop()
        stopped = time.monotonic()
        converge(ctx, c, stopped, DEFAULT_BOUND, what="the last write")
        verify(ctx, c, w)


def scenario_divergent(ctx, binary):
    """Partition {1,2} | {3}; 10,000 keys imported on node3, 1,000 on node1, register writes on
    both sides; heal; every node must hold everything within the goal of 2 s."""
    with Cluster(binary, 3, "divergent") as c:
        c.start_all()
        c.partition({1, 2}, {3})
        ctx.say("partitioned {node1,node2} | {node3}")
        if not wait_seen_down(c, [1, 2], 3):
            raise Failure("node3 was not seen down during the partition")
        w = Workload(c, [f"d{i}" for i in range(4)], writers=2).start()
        minority = {f"div3-{i:05d}": {"n": i, "side": "minority"} for i in range(10_000)}
        majority = {f"div1-{i:05d}": {"n": i, "side": "majority"} for i in range(1_000)}
        t = time.monotonic()
        c.import_keys(3, minority.items())
        c.import_keys(1, majority.items())
        ctx.say(f"imported 10,000 keys on node3 and 1,000 on node1 in {time.monotonic() - t:.2f} s")
        time.sleep(0.5)
        w.stop()
        before = c.statuses()
        ctx.say("before heal: " + ", ".join(f"node{k} {s['entryCount']} entries" for k, s in before.items()))
        c.heal()
        healed = time.monotonic()
        converge(ctx, c, healed, DIVERGENT_BOUND)
        problems = check_bulk(c, "div3-", minority) + check_bulk(c, "div1-", majority)
        if problems:
            raise Failure("; ".join(problems))
        ctx.say("all 11,000 imported keys present with their values on every node")
        verify(ctx, c, w)


SCENARIOS = [
    ("partition", scenario_partition),
    ("one-way", scenario_one_way),
    ("packet-loss", scenario_packet_loss),
    ("late-joiner", scenario_late_joiner),
    ("kill-restart", scenario_kill_restart),
    ("pause", scenario_pause),
    ("divergent-10k", scenario_divergent),
]


# ---- driver ---------------------------------------------------------------------------------

def skip_reason():
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root (network namespaces and iptables)"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    probe = f"replica-faults-{os.getpid()}-probe"
    try:
        result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            return f"cannot create a network namespace: {result.stderr.strip()}"
        result = subprocess.run(["ip", "netns", "exec", probe, "iptables", "-A", "OUTPUT", "-s", "127.0.1.1",
                                 "-d", "127.0.1.2", "-m", "statistic", "--mode", "random",
                                 "--probability", "0.3", "-j", "DROP"],
                                capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            return f"iptables does not work inside a namespace: {result.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


def terminate(signum, _frame):
    # Turn SIGTERM into an exception so that every `with Cluster(...)` cleans up.
    raise SystemExit(128 + signum)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", help="replica-node binary (default: $REPLICA_NODE_BINARY or .build/debug/replica-node)")
    parser.add_argument("--only", action="append", default=[], help="run only these scenarios (repeat or comma-separate)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument("--repeat", type=int, default=1, help="run each selected scenario N times (flakiness checks)")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy every node's log to DIR/<scenario>-<run>/ before cleanup")
    args = parser.parse_args()

    if args.list:
        for name, fn in SCENARIOS:
            print(f"{name:15} {fn.__doc__.split(chr(10))[0]}")
        return 0
    selected = SCENARIOS
    if args.only:
        names = {n.strip() for item in args.only for n in item.split(",") if n.strip()}
        unknown = names - {name for name, _ in SCENARIOS}
        if unknown:
            print(f"unknown scenario(s): {', '.join(sorted(unknown))}; known: {', '.join(n for n, _ in SCENARIOS)}")
            return 2
        selected = [(n, f) for n, f in SCENARIOS if n in names]
    selected = [item for item in selected for _ in range(max(1, args.repeat))]
    if args.keep_logs:
        harness.KEEP_LOGS = os.path.abspath(args.keep_logs)

    binary = args.binary or os.environ.get("REPLICA_NODE_BINARY") or os.path.join(REPO, ".build", "debug", "replica-node")
    binary = os.path.abspath(binary)
    if not os.access(binary, os.X_OK):
        print(f"replica-node binary not found at {binary}; run `swift build` or pass --binary")
        print(f"0 passed, {len(selected)} failed")
        return 1

    reason = skip_reason()
    if reason:
        print(f"skipping the fault tests: {reason}")
        print(f"0 passed, 0 failed, {len(selected)} skipped")
        return 0

    signal.signal(signal.SIGTERM, terminate)
    # Explicitly, also when started in the background (where SIGINT starts out ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    passed, failed, results = 0, 0, []
    started = time.monotonic()
    try:
        for name, fn in selected:
            ctx = Context(name)
            print(f"=== {name}: {fn.__doc__.split(chr(10))[0]}", flush=True)
            t = time.monotonic()
            try:
                fn(ctx, binary)
                verdict = "PASS"
                passed += 1
            except Failure as error:
                verdict = f"FAIL: {error}"
                failed += 1
            except Exception as error:  # harness trouble counts as a failure, with its trace
                traceback.print_exc()
                verdict = f"FAIL: {type(error).__name__}: {error}"
                failed += 1
            conv = ctx.figures.get("convergence_s")
            conv_text = f"convergence {conv:.2f} s" if conv is not None else "no convergence figure"
            print(f"{verdict.split(':')[0]} {name} ({conv_text}; {time.monotonic() - t:.1f} s)"
                  + ("" if verdict == "PASS" else f" -- {verdict[6:]}"), flush=True)
            results.append((name, verdict, conv))
    finally:
        for cluster in list(harness.LIVE_CLUSTERS):
            cluster.close()
    print()
    print("scenario        result  convergence")
    for name, verdict, conv in results:
        print(f"{name:15} {verdict[:4]:7} {'%.2f s' % conv if conv is not None else '-'}")
    print(f"total {time.monotonic() - started:.1f} s")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        for cluster in list(harness.LIVE_CLUSTERS):
            cluster.close()
        print("interrupted")
        sys.exit(130)
