#!/usr/bin/python3
"""Fault tests for Replica: partitions, one-way partitions, packet loss, late joiners, kill -9,
SIGSTOP, 10,000 divergent keys, counters and drink logs across a partition, and a wiped node;
then membership (membership.py): a node joining at runtime, restarted and wiped nodes rejoining,
leave (also over 100 ms links, handing its writes over), forget, a bridge partition, 200 ms links, discovery by beacon, and the catch-up volume;
a skewed clock (clocks.py), a full disk (disks.py), and a node of the previous release among
nodes of this build (versions.py).
Each is checked Jepsen style after heal.

    sudo /usr/bin/python3 Tests/cluster/faults.py [--binary PATH] [--only NAME[,NAME]] [--list]

Each scenario starts its own 3-node cluster inside a private network namespace (see
harness.py), injects faults with iptables / signals while client threads write, heals, waits
(polling `status --json`, with a deadline) until every node reports the same digest, and then
checks that no acknowledged write was lost. The output ends with `N passed, N failed`; the exit
code is 0 only if every scenario passed. Without root, `ip netns` or iptables the scenarios are
skipped with a printed reason and the exit code is 0.
"""

import argparse
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (Cluster, Workload, add_op, check_bulk, check_counter, check_drinks,  # noqa: E402
                     check_register, incr_op, op_summary, remove_op, run_scripts)

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Convergence bounds (seconds from heal to equal digests on every node).
DEFAULT_BOUND = 10.0
DIVERGENT_BOUND = 2.0   # the goal for 10,000 divergent keys


class Skipped(Exception):
    """A scenario that cannot run here (what it needs is missing): said, not counted as passed."""


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


def settle(ctx, cluster, workload, ops):
    """Stops the writers, waits for convergence after the last write, and checks registers,
    the `visits` counter and the drinks on every node; returns the counter values by node."""
    workload.stop()
    converge(ctx, cluster, time.monotonic(), DEFAULT_BOUND, what="the last write")
    verify(ctx, cluster, workload)
    problems, values = check_counter(cluster, "visits", ops)
    problems += check_drinks(cluster, ops)[0]
    for p in problems[:20]:
        ctx.say(p)
    if problems:
        raise Failure(f"{len(problems)} counter or drink violation(s): " + "; ".join(problems[:3]))
    return values


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

def cut_write_heal(ctx, binary, name, key_prefix, cut, what):
    """Writes on all nodes, applies `cut` until node3 is seen down by the others, heals, and
    checks convergence and that no acknowledged write was lost."""
    with Cluster(binary, 3, name) as c:
        c.start_all()
        w = Workload(c, [f"{key_prefix}{i}" for i in range(6)], writers=3).start()
        time.sleep(1.0)
        cut(c)
        ctx.say(what)
        if not wait_seen_down(c, [1, 2], 3):
            raise Failure("node3 was not seen down by node1/node2 during the cut")
        time.sleep(1.0)
        w.stop()
        c.heal()
        healed = time.monotonic()
        ctx.say(f"healed; acknowledged writes per node: {writes_by_node(w)}")
        converge(ctx, c, healed, DEFAULT_BOUND)
        verify(ctx, c, w)


def scenario_partition(ctx, binary):
    """Majority/minority partition {1,2} | {3}, writes on both sides, heal."""
    cut_write_heal(ctx, binary, "partition", "p", lambda c: c.partition({1, 2}, {3}),
                   "partitioned {node1,node2} | {node3}")


def scenario_one_way(ctx, binary):
    """node3 cannot send to node1 and node2 but receives from them; writes everywhere; heal."""
    def cut(c):
        c.cut_one_way(3, 1)
        c.cut_one_way(3, 2)
    cut_write_heal(ctx, binary, "oneway", "o", cut, "dropping every packet node3 -> node1 and node3 -> node2")


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


def drink_date(index, tie=None):
    """Distinct ISO 8601 dates with milliseconds, 7 min 13 ms apart; `tie` reuses a date."""
    base = datetime.datetime(2024, 5, 1, 6, 0, 0, tzinfo=datetime.timezone.utc)
    t = base + datetime.timedelta(minutes=7 * (index if tie is None else tie),
                                  milliseconds=13 * (index if tie is None else tie))
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def side_script(rng, node, incarnation, tag, increments, decrements, adds, removals_of_own,
                other_removals, first_date, date_step, tie_date=None):
    """One client thread's ops, shuffled: `increments` incr of +1/+2/+5, `decrements` of -3,
    `adds` drinks named `<tag>-<j>`, removals of `removals_of_own` of those adds (each placed
    after its add), and removals of the given pre-existing drink ids."""
    ops = [incr_op(node, rng.choice([1, 1, 1, 2, 5]), incarnation) for _ in range(increments)]
    ops += [incr_op(node, -3, incarnation) for _ in range(decrements)]
    added = []
    for j in range(adds):
        date = drink_date(first_date + j * date_step, tie=tie_date if j == 0 else None)
        added.append(add_op(node, f"{tag}-{j}", rng.randint(0, 300), date))
    ops += added
    rng.shuffle(ops)
    for drink_id in other_removals:
        ops.insert(rng.randint(0, len(ops)), remove_op(node, drink_id=drink_id))
    for add in rng.sample(added, removals_of_own):
        ops.insert(rng.randint(ops.index(add) + 1, len(ops)), remove_op(node, ref=add))
    return ops


def check_ops(ctx, cluster, ops, ks=None, what="every node"):
    """check_counter + check_drinks on nodes `ks`; raises Failure with the problems."""
    problems, values = check_counter(cluster, "visits", ops, ks)
    drink_problems, lists = check_drinks(cluster, ops, ks)
    problems += drink_problems
    for p in problems[:20]:
        ctx.say(p)
    if problems:
        raise Failure(f"{len(problems)} checker violation(s) on {what}")
    some = next(iter(lists.values()))
    ctx.say(f"checker ({what}): counter visits = {sorted(set(values.values()))}, {len(some)} drinks, "
            f"exactly the acknowledged operations")
    return values, lists


def require_no_rejections(ops):
    rejected = [op for op in ops if op.rejected]
    if rejected:
        raise Failure(f"{len(rejected)} removal(s) of drinks the node should know were refused: {rejected[:3]}")


def scenario_counters_drinks(ctx, binary):
    """{1,2} | {3}: counter increments and drink adds/removals on both sides; heal; exact totals.

    1,100 increments/decrements of `visits` (550 per side), 60 drinks added and 12 of them
    removed, plus 6 removals of the 10 drinks added before the partition (own side's, other
    side's, and one removed on both sides). Every node must then hold exactly the acknowledged
    operations: counter sum and per-incarnation slots, drink ids/names/mg/dates, date order."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    ctx.say(f"seed {seed} (amounts, drink mg, operation order per client thread)")
    with Cluster(binary, 3, "counters") as c:
        c.start_all()
        inc = {k: c.counter_slot(k) for k in c.nodes}
        # Before the partition: 10 drinks (node1, node2, node3 in turn) and 10 increments per node.
        pre = [add_op(k % 3 + 1, f"pre-{k}", 10 * k, drink_date(1000 + k)) for k in range(10)]
        pre += [incr_op(k, 1, inc[k]) for k in c.nodes for _ in range(10)]
        pre = run_scripts(c, [[op for op in pre if op.node == k] for k in c.nodes])
        if not all(op.ok for op in pre):
            raise Failure(f"operations before the partition failed: {[op for op in pre if not op.ok][:3]}")
        if c.wait_converged(time.monotonic(), timeout=15)[0] is None:
            raise Failure("no convergence before the partition")
        ids = [op.drink_id for op in pre if op.kind == "add"]
        ctx.say("before the partition: 10 drinks and 30 increments, converged")

        c.partition({1, 2}, {3})
        ctx.say("partitioned {node1,node2} | {node3}")
        if not wait_seen_down(c, [1, 2], 3):
            raise Failure("node3 was not seen down by the majority during the partition")
        # pre-k was added on node (k % 3 + 1). The majority removes pre-0 (added on node1),
        # pre-1 (node2) and pre-2 (node3); the minority removes pre-5 (node3) and pre-3 (node1);
        # both sides remove pre-8.
        scripts = [
            side_script(rng, 1, inc[1], "n1", 250, 25, 15, 3, [ids[0], ids[2], ids[8]], 0, 4, tie_date=1),
            side_script(rng, 2, inc[2], "n2", 250, 25, 15, 3, [ids[1]], 2, 4),
            side_script(rng, 3, inc[3], "n3a", 250, 25, 15, 3, [ids[5], ids[8]], 1, 4, tie_date=1),
            side_script(rng, 3, inc[3], "n3b", 250, 25, 15, 3, [ids[3]], 3, 4),
        ]
        t = time.monotonic()
        ops = run_scripts(c, scripts)
        elapsed = time.monotonic() - t
        majority = [op for op in ops if op.node in (1, 2)]
        minority = [op for op in ops if op.node == 3]
        ctx.say(f"during the partition ({elapsed:.1f} s, 4 client threads): majority {op_summary(majority)}")
        ctx.say(f"  minority {op_summary(minority)}")
        require_no_rejections(ops)
        # The partition held: each side has exactly its own operations.
        if c.wait_converged(time.monotonic(), timeout=15, ks=[1, 2])[0] is None:
            raise Failure("node1 and node2 did not converge during the partition")
        check_ops(ctx, c, pre + majority, ks=[1, 2], what="the majority before heal")
        check_ops(ctx, c, pre + minority, ks=[3], what="node3 before heal")

        c.heal()
        healed = time.monotonic()
        ctx.say("healed")
        converge(ctx, c, healed, DEFAULT_BOUND)
        check_ops(ctx, c, pre + ops)


def scenario_wiped_node(ctx, binary):
    """Wipe node3's data dir, restart it with the same id: its old counter slot still counts.

    Increments on all nodes and a few drinks (one removed); node3 is stopped, its data
    directory deleted, restarted with the same id (new incarnation, hence a new counter slot),
    incremented at once; then more increments everywhere. The old slot and the drinks survive."""
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    ctx.say(f"seed {seed} (increment amounts)")
    with Cluster(binary, 3, "wiped") as c:
        c.start_all()
        old3 = c.incarnation(3)
        inc = {k: c.counter_slot(k) for k in c.nodes}
        scripts = [[incr_op(k, rng.choice([1, 2, 5, -3]), inc[k]) for _ in range(60)] for k in c.nodes]
        scripts[2] += [add_op(3, f"before-wipe-{j}", 50 + j, drink_date(j)) for j in range(3)]
        scripts[0] += [add_op(1, "before-wipe-node1", 90, drink_date(10))]
        ops = run_scripts(c, scripts)
        # One drink added on node3 is removed on node1 before the wipe: it must stay removed.
        if c.wait_converged(time.monotonic(), timeout=15)[0] is None:
            raise Failure("no convergence before the wipe")
        added3 = [op for op in ops if op.kind == "add" and op.node == 3 and op.ok]
        if added3:
            ops += run_scripts(c, [[remove_op(1, drink_id=added3[0].drink_id)]])
        ctx.say(f"before the wipe: {op_summary(ops)}")
        require_no_rejections(ops)
        if c.wait_converged(time.monotonic(), timeout=15)[0] is None:
            raise Failure("no convergence before the wipe")
        check_ops(ctx, c, ops, what="every node before the wipe")

        before_slots = {(x["incarnation"], x["node"], x["total"])
                        for x in json.loads(c.client(1, ["counter", "visits", "--json"]).stdout)["slots"]}

        code = c.stop(3)
        c.wipe(3)
        ctx.say(f"stopped node3 (exit {code}), deleted its data directory")
        started = time.monotonic()
        c.start(3)
        ready = time.monotonic() - started
        new3 = c.incarnation(3)
        if new3 == old3:
            raise Failure(f"node3 kept its incarnation {old3} after the wipe")
        ctx.say(f"restarted node3 with the same id: incarnation {old3[:8]} -> {new3[:8]}; "
                f"ready {ready:.2f} s after start")
        old_slot3, new_slot3 = inc[3], c.counter_slot(3)
        # Right away, before it has caught up: 20 increments on the new node3 (a thread), while
        # node3's slots are polled until it holds every slot of before the wipe (old node3's too).
        inc[3] = new_slot3
        fresh = []
        writer = threading.Thread(target=lambda: fresh.extend(
            run_scripts(c, [[incr_op(3, rng.choice([1, 2, 5, -3]), new_slot3) for _ in range(20)]])), daemon=True)
        writer.start()

        def caught_up():
            result = c.client(3, ["counter", "visits", "--json"])
            return result.returncode == 0 and before_slots <= {
                (x["incarnation"], x["node"], x["total"]) for x in json.loads(result.stdout)["slots"]}
        if not wait_for(caught_up, DEFAULT_BOUND):
            raise Failure(f"node3 did not get the slots of before the wipe within {DEFAULT_BOUND:.0f} s")
        catch_up = time.monotonic() - started
        writer.join()
        done = time.monotonic() - started
        ops += fresh
        ctx.say(f"node3 held every pre-wipe counter slot {catch_up:.2f} s after its process start "
                f"(poll resolution ~0.05 s); meanwhile on node3: {op_summary(fresh)} (done at {done:.2f} s)")
        converge(ctx, c, started, DEFAULT_BOUND, what="node3's process start (its 20 increments included)")
        check_ops(ctx, c, ops, what="every node after the wipe")
        # More increments everywhere, then the final check.
        more = run_scripts(c, [[incr_op(k, rng.choice([1, 2, 5, -3]), inc[k]) for _ in range(30)] for k in c.nodes])
        ops += more
        last = time.monotonic()
        ctx.say(f"then on every node: {op_summary(more)}")
        converge(ctx, c, last, DEFAULT_BOUND, what="the last increment")
        ctx.figures["convergence_s"] = catch_up  # the scenario's figure: the wiped node's catch-up
        _, lists = check_ops(ctx, c, ops)
        names = {d["name"] for d in next(iter(lists.values()))}
        if not {"before-wipe-node1", "before-wipe-1", "before-wipe-2"} <= names or "before-wipe-0" in names:
            raise Failure(f"drinks after the wipe: {sorted(names)}")
        ctx.say("drinks added before the wipe (on node3 and node1) listed everywhere; the one removed stays removed")
        slots = json.loads(c.client(1, ["counter", "visits", "--json"]).stdout)["slots"]
        node3_slots = sorted(s["incarnation"] for s in slots if s["node"] == "node3")
        if node3_slots != sorted([old_slot3, new_slot3]):
            raise Failure(f"node3's slots are {node3_slots}, expected the old and the new incarnation's")
        ctx.say(f"node3 has two slots (old {old_slot3[:8]}, new {new_slot3[:8]}); the old one still counts")


import clocks  # noqa: E402  (a node whose clock is wrong)
import disks  # noqa: E402  (a node whose disk fills)
import membership  # noqa: E402  (scenarios of nodes joining, leaving, slow links, relays)
import versions  # noqa: E402  (a node of the previous release among nodes of this build)

membership.converge, membership.verify, membership.wait_for = converge, verify, wait_for
membership.peer_state, membership.Failure, membership.settle = peer_state, Failure, settle
clocks.converge, clocks.wait_for, clocks.Failure = converge, wait_for, Failure
disks.converge, disks.wait_for, disks.verify, disks.Failure = converge, wait_for, verify, Failure
disks.writes_by_node = writes_by_node
versions.settle, versions.Failure, versions.Skipped = settle, Failure, Skipped

BULK_AFTER_COPY = 60_000


def node3_loses_increments(ctx, binary, cold):
    """node3's store goes back to an earlier copy, and members hold what it wrote since: its
    next increments must not undo that (docs/sharing.md, "Counters after a crash").

    Increments on node3; a copy of its store; more increments on node3 and node1, and keys
    imported on node1 (so that node3's start-up sync takes a while), converged; node3's store
    replaced by the copy; node3 restarted and at once incremented, before its start-up sync
    may have brought its own slot back. Every node must then hold every acknowledged
    increment, each in the slot it went to. Until 0.25.0 node3 went on adding to its old slot
    from the copy's total and, being newer, that replaced the members' slot: the increments
    made after the copy were lost everywhere.

    `cold`: the copy is of node3 stopped (`cp -a`), restored the documented way (`rm -rf` and
    copy back: on ext4 the file may get its old inode again) after another clean stop. Else it
    is an online copy (SQLite's backup, as `sqlite3 .backup` takes it) put in place after
    `kill -9`: what a power loss leaves."""
    import sqlite3
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    ctx.say(f"seed {seed} (increment amounts)")
    with Cluster(binary, 3, "restored" if cold else "lost") as c:
        c.start_all()
        inc = {k: c.counter_slot(k) for k in c.nodes}
        ops = run_scripts(c, [[incr_op(3, rng.choice([1, 2, 5]), inc[3]) for _ in range(10)]])
        data3 = c.nodes[3].data
        store = os.path.join(data3, "replica.sqlite")
        copy = os.path.join(os.path.dirname(data3), "node3-copy")
        if cold:
            c.stop(3)
            shutil.copytree(data3, copy, symlinks=True)
            c.start(3)
            if c.counter_slot(3) != inc[3]:
                raise Failure("node3 took a new counter slot after a clean stop")
        else:
            os.mkdir(copy)
            source = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
            target = sqlite3.connect(os.path.join(copy, "replica.sqlite"))
            source.backup(target)
            target.close()
            source.close()
        ops += run_scripts(c, [[incr_op(3, rng.choice([1, 2, 5]), inc[3]) for _ in range(10)],
                               [incr_op(1, rng.choice([1, 2, 5]), inc[1]) for _ in range(10)]])
        written = c.import_keys(1, [(f"bulk.{i:06d}", i) for i in range(BULK_AFTER_COPY)])
        ctx.say(f"after the copy: 20 increments (10 on node3) and {written} keys imported on node1")
        if not all(op.ok for op in ops):
            raise Failure(f"increments before the loss failed: {[op for op in ops if not op.ok][:3]}")
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="the increments before the loss")
        check_ops(ctx, c, ops, what="every node before the loss")

        if cold:
            c.stop(3)
            shutil.rmtree(data3)
            shutil.copytree(copy, data3, symlinks=True)
            ctx.say("stopped node3; its data directory restored from the copy taken after its first 10 increments")
        else:
            c.kill(3)
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(store + suffix):
                    os.remove(store + suffix)
            shutil.move(os.path.join(copy, "replica.sqlite"), store)
            ctx.say("kill -9 node3; its store replaced by the copy taken after its first 10 increments")
        started = time.monotonic()
        c.start(3)
        slot3 = c.counter_slot(3)
        if slot3 == inc[3]:
            raise Failure(f"node3 kept its counter slot {slot3[:8]} on a store older than its members know")
        ctx.say(f"restarted node3: counter slot {inc[3][:8]} -> {slot3[:8]}")
        after = run_scripts(c, [[incr_op(3, rng.choice([1, 2, 5]), slot3) for _ in range(10)]])
        ops += after
        ctx.say(f"at once on node3: {op_summary(after)}")
        converge(ctx, c, started, DEFAULT_BOUND, what="node3's restart")
        check_ops(ctx, c, ops)


def scenario_lost_commits(ctx, binary):
    """node3's disk loses its last commits (a power loss), which members hold; see node3_loses_increments."""
    node3_loses_increments(ctx, binary, cold=False)


def scenario_restored_backup(ctx, binary):
    """node3 is restored from a copy taken while it was stopped; see node3_loses_increments."""
    node3_loses_increments(ctx, binary, cold=True)


SCENARIOS = [
    ("partition", scenario_partition),
    ("one-way", scenario_one_way),
    ("packet-loss", scenario_packet_loss),
    ("late-joiner", scenario_late_joiner),
    ("kill-restart", scenario_kill_restart),
    ("pause", scenario_pause),
    ("divergent-10k", scenario_divergent),
    ("counters-drinks", scenario_counters_drinks),
    ("wiped-node", scenario_wiped_node),
    ("lost-commits", scenario_lost_commits),
    ("restored-backup", scenario_restored_backup),
] + membership.SCENARIOS + clocks.SCENARIOS + disks.SCENARIOS + versions.SCENARIOS


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
    passed, failed, skipped, results = 0, 0, 0, []
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
            except Skipped as reason:
                verdict = f"SKIP: {reason}"
                skipped += 1
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
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        for cluster in list(harness.LIVE_CLUSTERS):
            cluster.close()
        print("interrupted")
        sys.exit(130)
