"""Version scenario for faults.py: a node of the previous release (0.34.0) and nodes of this
build in one cluster converge both ways, through writes, counters, drinks and a kill -9 of
each, with nothing lost and no problem listed. The wire format must not change between them.

The previous release's binary comes from $REPLICA_OLD_NODE_BINARY (scripts/test builds it with
scripts/build-old-node); without it the scenario is skipped, saying why."""

import os
import time

from harness import Cluster, Workload, add_op, incr_op, run_scripts

# The faults.py helpers, given by faults.py itself (it imports this module).
settle = Failure = Skipped = None


def old_binary():
    path = os.environ.get("REPLICA_OLD_NODE_BINARY")
    if not path:
        raise Skipped("REPLICA_OLD_NODE_BINARY is not set (scripts/build-old-node builds 0.34.0)")
    if not os.access(path, os.X_OK):
        raise Skipped(f"no executable at REPLICA_OLD_NODE_BINARY={path}")
    return os.path.abspath(path)


def no_problems(ctx, c):
    for k, s in c.statuses().items():
        if s is None:
            raise Failure(f"node{k} did not answer status")
        if s.get("problems"):
            raise Failure(f"node{k} lists problems: {s['problems']}")
    ctx.say("no node lists a problem")


def scenario_mixed_versions(ctx, binary):
    """node1 runs 0.34.0, node2 and node3 this build: writes, increments and drinks on every
    node, kill -9 and restart of the old node and of a new one; they converge both ways."""
    old = old_binary()
    with Cluster(binary, 3, "versions") as c:
        c.nodes[1].binary = old
        c.start_all()
        ctx.say("node1 runs 0.34.0; node2 and node3 this build; all alive to each other")
        slots = {k: c.counter_slot(k) for k in c.nodes}
        ops = [incr_op(k, 1, slots[k]) for k in c.nodes for _ in range(20)]
        ops += [add_op(k, f"mixed-{k}-{i}", 10 * k + i, f"2026-12-0{k}T08:0{i}:00.000Z") for k in c.nodes for i in range(3)]
        w = Workload(c, [f"v{i}" for i in range(6)], writers=3).start()
        ops = run_scripts(c, [[op for op in ops if op.node == k] for k in c.nodes])
        if not all(op.ok for op in ops):
            raise Failure(f"operations failed: {[op for op in ops if not op.ok][:3]}")
        for victim, what in ((1, "the 0.34.0 node"), (2, "a node of this build")):
            c.kill(victim)
            ctx.say(f"kill -9 node{victim} ({what}) while the others write")
            time.sleep(1.0)
            c.start(victim)
            slots[victim] = c.counter_slot(victim)
            more = run_scripts(c, [[incr_op(victim, 1, slots[victim]) for _ in range(10)]])
            if not all(op.ok for op in more):
                raise Failure(f"increments on the restarted node{victim} failed: {[op for op in more if not op.ok][:3]}")
            ops += more
        values = settle(ctx, c, w, ops)
        ctx.say(f"counter visits = {sorted(set(values.values()))} on every node; 9 drinks everywhere")
        no_problems(ctx, c)


SCENARIOS = [
    ("mixed-versions", scenario_mixed_versions),
]
