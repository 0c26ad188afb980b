"""Membership scenarios for faults.py: nodes that join at runtime, restart, are wiped, leave or
are forgotten; a partial ("bridge") partition; 200 ms links; discovery by beacon; and the
volume a node that fell behind receives to catch up. Each is checked Jepsen style like the
other scenarios (no acknowledged write lost), plus the property it is about."""

import contextlib
import json
import os
import subprocess
import threading
import time

from harness import Cluster, Workload, add_op, check_register, incr_op, run, run_scripts

# The faults.py helpers, given by faults.py itself (it imports this module).
converge = verify = wait_for = peer_state = Failure = settle = None
DEFAULT_BOUND = 10.0


def peers_of(status):
    return {p["id"]: p for p in (status or {}).get("peers", [])}


def wait_states(cluster, observers, target_id, state, timeout):
    """Waits until every observer lists `target_id` in `state` (None: not listed at all);
    returns the seconds it took, or None."""
    start = time.monotonic()
    ok = wait_for(lambda: all((peers_of(s).get(target_id) or {}).get("state") == state
                              if state is not None else target_id not in peers_of(s)
                              for s in cluster.statuses(observers).values()), timeout, step=0.05)
    return time.monotonic() - start if ok else None


def scenario_join_runtime(ctx, binary):
    """Three nodes run; node4 starts knowing only node1 (nobody else knows it); writes go to all
    four, node4 included: its writes must reach the others, and everyone must list it."""
    with Cluster(binary, 3, "join", seeds=lambda k: [1] if k == 4 else [j for j in (1, 2, 3) if j != k]) as c:
        c.start_all()
        w = Workload(c, [f"j{i}" for i in range(6)], writers=3).start()
        time.sleep(1.0)
        c.add_node()
        started = time.monotonic()
        c.start(4)
        ctx.say("started node4 with --peer node1 only")
        c.wait_all_alive(timeout=15)
        ctx.say(f"every node sees every other alive {time.monotonic() - started:.2f} s after node4 started")
        ops = run_scripts(c, [[incr_op(k, 1) for _ in range(20)] for k in (1, 4)] +
                          [[add_op(4, "joined-latte", 75, "2024-05-01T08:00:00.000Z")]])
        time.sleep(1.0)
        values = settle(ctx, c, w, ops)
        node4_writes = sum(1 for op in w.ops if op.ok and op.node == 4)
        ctx.say(f"node4's {node4_writes} acknowledged sets, 20 increments and a drink are on every node "
                f"(counter = {sorted(set(values.values()))})")


def scenario_rejoin(ctx, binary):
    """node3 knows only node1. Restarted on its data, it rejoins by itself; wiped, it rejoins
    as a new incarnation, and the others list the new one. Restarted with no seed at all and at
    another port, it dials the members saved in its store, and they dial its new address."""
    with Cluster(binary, 3, "rejoin", seeds=lambda k: [1] if k == 3 else [j for j in (1, 2) if j != k]) as c:
        c.start_all()
        w = Workload(c, [f"r{i}" for i in range(4)], writers=2, targets=lambda wid: [1, 2]).start()
        old = c.incarnation(3)
        c.stop(3)
        c.start(3)
        c.wait_all_alive()
        ctx.say("node3 restarted on its data and rejoined")
        c.stop(3)
        c.wipe(3)
        started = time.monotonic()
        c.start(3)
        c.wait_all_alive()
        new = c.incarnation(3)
        if new == old:
            raise Failure("the wiped node kept its incarnation")
        listed = {k: (peers_of(s).get("node3") or {}).get("incarnation", "").lower() for k, s in c.statuses([1, 2]).items()}
        if any(i != new for i in listed.values()):
            raise Failure(f"the others list node3 as {listed}, not its new incarnation {new}")
        ctx.say(f"wiped node3 rejoined as incarnation {new[:8]} (was {old[:8]}) in {time.monotonic() - started:.2f} s")
        # (0.18.0 kept no member table: node3 came back alone, its writes reached nobody, and
        # the others listed it down at its old address.)
        c.stop(3)
        c.seeds = lambda k: [] if k == 3 else [j for j in (1, 2) if j != k]
        c.nodes[3].port = c.port + 100
        started = time.monotonic()
        c.start(3)

        def moved_and_alive():
            peers = [peers_of(s).get("node3") or {} for s in c.statuses([1, 2]).values()]
            return all(p.get("address") == c.nodes[3].listen and p.get("state") == "alive" for p in peers)
        if not wait_for(moved_and_alive, 10):
            listed = {k: peers_of(s).get("node3") for k, s in c.statuses([1, 2]).items()}
            raise Failure(f"the others do not list node3 alive at its new address {c.nodes[3].listen}: {listed}")
        c.wait_all_alive()
        written = c.client(3, ["set", "from-moved-node3", '"x"'])
        if written.returncode != 0:
            raise Failure(f"the write on the moved node3 failed: {written.stderr.strip()}")
        if not wait_for(lambda: all(c.client(k, ["get", "from-moved-node3"]).returncode == 0 for k in (1, 2)), 5):
            raise Failure("the moved node3's write did not reach node1 and node2 within 5 s")
        ctx.say(f"node3 restarted with no seed at {c.nodes[3].listen}: members found from its saved table, "
                f"listed at the new address, its write replicated ({time.monotonic() - started:.2f} s)")
        w.stop()
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="the last write")
        verify(ctx, c, w)


def scenario_leave(ctx, binary):
    """node4 runs `leave`: it exits, every member lists it `left` within 2 s, and keeps it so."""
    with Cluster(binary, 4, "leave") as c:
        c.start_all()
        w = Workload(c, [f"v{i}" for i in range(4)], writers=2, targets=lambda wid: [1, 2, 3]).start()
        before = c.statuses([1, 2, 3])
        t = time.monotonic()
        result = c.leave(4)
        if result.returncode != 0:
            raise Failure(f"leave failed: {result.stderr.strip()}")
        code = c.nodes[4].process.wait(timeout=10)
        seconds = wait_states(c, [1, 2, 3], "node4", "left", 2.0)
        if seconds is None:
            raise Failure(f"not every member lists node4 left within 2 s: "
                          f"{ {k: (peers_of(s).get('node4') or {}).get('state') for k, s in c.statuses([1, 2, 3]).items()} }")
        ctx.say(f"leave returned in {time.monotonic() - t:.2f} s ({result.stdout.strip()}); node4 exited {code}; "
                f"listed left everywhere {seconds:.2f} s after")
        time.sleep(3.0)
        still = {k: (peers_of(s).get("node4") or {}).get("state") for k, s in c.statuses([1, 2, 3]).items()}
        if set(still.values()) != {"left"}:
            raise Failure(f"node4 is listed as {still} 3 s later")
        w.stop()
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="the last write", ks=[1, 2, 3])
        problems = check_register(c, w.ops, w.keys, ks=[1, 2, 3])
        if problems:
            raise Failure("; ".join(problems[:5]))
        ctx.say(f"still left 3 s later; the {len(before)} remaining members kept replicating, no acknowledged write lost")


def scenario_leave_together(ctx, binary):
    """node3 and node4 each write a key, then run `leave` at the same moment: each leaves at once,
    acknowledged by every member it still asked (the other leaver is no longer waited for), and
    node1 and node2 hold both keys. Before, the two waited for each other: up to 12 s, the other
    named as not confirming (found by an outside tester)."""
    with Cluster(binary, 4, "leave-together") as c:
        c.start_all()
        for k in (3, 4):
            if c.client(k, ["set", f"from{k}", f'"{k}"']).returncode != 0:
                raise Failure(f"the write on node{k} failed")
        results, took = {}, {}

        def leave(k):
            t = time.monotonic()
            results[k] = c.client(k, ["leave", "--json"], timeout=40)
            took[k] = time.monotonic() - t

        threads = [threading.Thread(target=leave, args=(k,)) for k in (3, 4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        departures = {}
        for k in (3, 4):
            out = results[k].stdout.strip()
            try:
                departures[k] = json.loads(out)
            except ValueError:
                raise Failure(f"leave of node{k} (exit {results[k].returncode}): {out} {results[k].stderr.strip()}")
            d = departures[k]
            if results[k].returncode != 0 or not d.get("left") or set(d.get("acknowledged", [])) != set(d.get("asked", [None])):
                raise Failure(f"leave of node{k} (exit {results[k].returncode}, {took[k]:.1f} s): {out} {results[k].stderr.strip()}")
            if took[k] > 5:
                raise Failure(f"leave of node{k} took {took[k]:.1f} s: {out}")
        for k in (1, 2):
            for writer in (3, 4):
                if c.client(k, ["get", f"from{writer}"]).stdout.strip() != f'"{writer}"':
                    raise Failure(f"node{k} lacks node{writer}'s write after both left")
        if wait_states(c, [1, 2], "node3", "left", 2.0) is None or wait_states(c, [1, 2], "node4", "left", 2.0) is None:
            raise Failure("node1 and node2 do not list both leavers as left")
        ctx.say(f"both left at once: node3 in {took[3]:.2f} s (acknowledged by {departures[3]['acknowledged']}), "
                f"node4 in {took[4]:.2f} s (by {departures[4]['acknowledged']}); "
                "node1 and node2 hold both writes and list both as left")


def scenario_forget(ctx, binary):
    """node4 is killed and never comes back: `forget node4` on node1 removes it from every list."""
    with Cluster(binary, 4, "forget") as c:
        c.start_all()
        c.kill(4)
        if wait_states(c, [1, 2, 3], "node4", "down", 15) is None:
            raise Failure("node4 not seen down")
        result = c.forget(1, "node4")
        if result.returncode != 0:
            raise Failure(f"forget failed: {result.stderr.strip()}")
        seconds = wait_states(c, [1, 2, 3], "node4", None, 2.0)
        if seconds is None:
            raise Failure("node4 still listed 2 s after forget")
        ctx.say(f"forget node4 on node1: gone from every member's list in {seconds:.2f} s")
        refused = c.forget(1, "node2")
        if refused.returncode == 0:
            raise Failure("forgetting a live member was accepted")
        ctx.say(f"forgetting a live member is refused: {refused.stderr.strip()}")


def scenario_revoke(ctx, binary):
    """node3's key is removed from the trust directory while it runs: node1 and node2 end the
    connections it holds (it stops hearing them), refuse its new handshakes and list it as a
    `trust` problem; a write on node1 after that never reaches node3. With its key back, it
    converges."""
    with Cluster(binary, 3, "revoke") as c:
        c.start_all()
        pub = os.path.join(c.root, "keys", "node3.pub")
        aside = os.path.join(c.root, "node3.pub.revoked")
        os.rename(pub, aside)
        revoked = time.monotonic()
        if not wait_for(lambda: all((peers_of(c.status(3)).get(f"node{k}") or {}).get("state") not in (None, "alive")
                                    for k in (1, 2)), 10, step=0.1):
            raise Failure("node3 still hears node1 or node2 10 s after its key was removed")
        ctx.say(f"key removed: node3 stops hearing node1 and node2 within {time.monotonic() - revoked:.2f} s")

        def flagged(status):
            return (any(p["kind"] == "trust" and p["subject"] == "node3" for p in (status or {}).get("problems", []))
                    and (status or {}).get("refusedHandshakes"))
        if not wait_for(lambda: flagged(c.status(1)) and flagged(c.status(2)), 10, step=0.2):
            raise Failure(f"node1 or node2 does not list node3 as a trust problem with refused handshakes: {c.status(1)}")
        health = c.client(1, ["health"])
        ctx.say(f"node1 lists node3 as a trust problem and refuses its handshakes; health exits {health.returncode}")
        if health.returncode != 0:
            raise Failure("an untrusted member must not fail the health of the nodes that refuse it")
        if c.client(1, ["set", "after-revoke", '"secret"']).returncode != 0:
            raise Failure("the write on node1 failed")
        # A bounded wait is the point here: nothing may arrive within it.
        time.sleep(3)
        if c.get(3, "after-revoke") is not None:
            raise Failure("node3 received a write made after its key was revoked")
        ctx.say("a write on node1 after the revocation did not reach node3 within 3 s")

        os.rename(aside, pub)
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="its key was put back")
        if c.get(3, "after-revoke") is None:
            raise Failure("node3 lacks after-revoke once trusted again")


def scenario_bridge_partition(ctx, binary):
    """node1 and node3 cannot reach each other, both reach node2. Writes on node1 must be
    readable on node3 within 2 s (and node3's on node1) while writes continue."""
    with Cluster(binary, 3, "bridge") as c:
        c.start_all()
        c.cut(1, 3)
        cut = time.monotonic()
        ctx.say("cut node1 <-> node3; both reach node2")
        stale = {}
        stop = threading.Event()
        lock = threading.Lock()

        def writer(src, dst, tag):
            i = 0
            while not stop.is_set():
                key = f"bp-{tag}-{i:04d}"
                result = c.client(src, ["set", key, str(i)])
                if result.returncode == 0:
                    acked = time.monotonic()
                    with lock:
                        stale[key] = (acked, dst, None)
                i += 1
                time.sleep(0.1)

        def reader(k, tag):
            # Until the writers have finished (a `set` started before `stop` may be acknowledged
            # after it) and nothing acknowledged towards this reader is still unseen.
            while not writers_done.is_set() or any(v[1] == k and v[2] is None for v in stale.values()):
                result = c.client(k, ["keys", "--prefix", f"bp-{tag}-"], timeout=5)
                now = time.monotonic()
                if result.returncode == 0:
                    seen = set(result.stdout.split())
                    with lock:
                        for key in seen:
                            if key in stale and stale[key][2] is None:
                                stale[key] = (stale[key][0], k, now)
                if writers_done.is_set() and time.monotonic() - stopped_at[0] > 10:
                    return
                time.sleep(0.05)

        stopped_at = [0.0]
        writers_done = threading.Event()
        writers = [threading.Thread(target=writer, args=(1, 3, "a"), daemon=True),
                   threading.Thread(target=writer, args=(3, 1, "c"), daemon=True)]
        readers = [threading.Thread(target=reader, args=(3, "a"), daemon=True),
                   threading.Thread(target=reader, args=(1, "c"), daemon=True)]
        for t in writers + readers:
            t.start()
        time.sleep(12.0)
        stop.set()
        for t in writers:
            t.join(timeout=15)
        # The stop time before the event: a reader that sees `writers_done` must not find it
        # unset (0), which would end it at once, before it saw the last writes.
        stopped_at[0] = time.monotonic()
        writers_done.set()
        for t in readers:
            t.join(timeout=15)
        lags = [seen - acked for acked, _, seen in stale.values() if seen is not None]
        missing = [key for key, (_, _, seen) in stale.items() if seen is None]
        relays = {k: {p["id"]: p.get("relayedBy") for p in s["peers"]} for k, s in c.statuses([1, 3]).items()}
        ctx.say(f"{len(stale)} acknowledged writes across the cut; relays: node1 {relays[1]}, node3 {relays[3]}")
        if missing:
            for k in (1, 2, 3):
                held = [key for key in missing[:3] if c.client(k, ["get", key]).returncode == 0]
                status = c.status(k) or {}
                ctx.say(f"node{k} holds {held}; digest {status.get('digest')}; peers "
                        + json.dumps([{f: p.get(f) for f in ("id", "state", "relayedBy", "missingUpdates", "inSync")} for p in status.get("peers", [])]))
            raise Failure(f"{len(missing)} writes never seen on the other side, e.g. {missing[:3]}")
        worst = max(lags)
        slowest = sorted(((seen - acked, key) for key, (acked, _, seen) in stale.items() if seen is not None), reverse=True)[:4]
        ctx.say("slowest: " + ", ".join(f"{key} {lag:.2f} s (acknowledged {stale[key][0] - cut:.2f} s after the cut)" for lag, key in slowest))
        steady = [seen - acked for acked, _, seen in stale.values() if acked - cut > 2.0]
        ctx.say(f"staleness across the cut: max {worst:.2f} s (poll resolution ~0.1 s), "
                f"after the first 2 s max {max(steady):.2f} s, median {sorted(lags)[len(lags) // 2]:.2f} s")
        ctx.figures["convergence_s"] = worst
        if worst > 2.0:
            raise Failure(f"a write took {worst:.2f} s to cross, beyond 2 s")
        c.heal()
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND)


def start_delay_proxies(cluster, delay, rate=None, only=None):
    """One proxy per node (or per node of `only`) inside the namespace: 127.0.2.K:PORT(+1) ->
    127.0.1.K:PORT(+1); `rate`: bytes a second each way per connection."""
    mappings = []
    for node in cluster.nodes.values():
        if only is not None and node.index not in only:
            continue
        for port in (node.port, node.port + 1):
            mappings.append(f"127.0.2.{node.index}:{port}=127.0.1.{node.index}:{port}")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delay_proxy.py")
    limit = ["--rate", str(rate)] if rate else []
    proxy = subprocess.Popen(["ip", "netns", "exec", cluster.namespace, "/usr/bin/python3", script, "--delay", str(delay)] + limit + mappings,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    if proxy.stdout.readline().strip() != "ready":
        proxy.kill()
        raise Failure("the delay proxy did not start")
    return proxy


def scenario_slow_links(ctx, binary):
    """Every link has 200 ms of one-way delay (a TCP proxy in front of each node, which
    advertises the proxy): the cluster forms and replicates, and sees the round trip."""
    advertise = lambda k: f"127.0.2.{k}:7000"
    with Cluster(binary, 3, "slow", advertise=advertise) as c:
        proxy = start_delay_proxies(c, 0.2)
        try:
            t = time.monotonic()
            c.start_all(wait_alive=False)
            c.wait_all_alive(timeout=45)
            formed = time.monotonic() - t
            w = Workload(c, [f"s{i}" for i in range(6)], writers=3, timeout=6.0).start()
            time.sleep(6.0)
            w.stop()
            stopped = time.monotonic()
            converge(ctx, c, stopped, DEFAULT_BOUND, what="the last write")
            verify(ctx, c, w)
            rtts = sorted(p.get("roundTripMillis") or 0 for s in c.statuses().values() for p in s["peers"])
            ctx.say(f"formed in {formed:.2f} s over 200 ms links; round trips seen {rtts[0]:.0f}-{rtts[-1]:.0f} ms")
            if not rtts or rtts[0] < 380:
                raise Failure(f"the round trip shown ({rtts}) is not the links' 400 ms")
        finally:
            os.killpg(proxy.pid, 9)


def sync_problem(status, subject):
    return next((p for p in (status or {}).get("problems", []) if p["kind"] == "sync" and p["subject"] == subject), None)


def counter(status, name):
    """A counter of a `status --json` (None without a status)."""
    return None if status is None else (status.get("counters") or {}).get(name, 0)


@contextlib.contextmanager
def behind_a_slow_member(binary, name, rate, values):
    """Two nodes: node1, reached through a proxy that carries `rate` bytes a second each way
    (it advertises the proxy), holds `values`; node2, not started yet, waits 1 s for a sync
    chunk (`--sync-chunk-timeout 1`: then 2 s, then 4 s). node1 has the same setting: a reply
    it could queue nothing of for 4 s may give its place to another request."""
    advertise = lambda k: "127.0.2.1:7000" if k == 1 else None
    extra = lambda k: ["--sync-chunk-timeout", "1"]
    with Cluster(binary, 2, name, advertise=advertise, extra_args=extra) as c:
        proxy = start_delay_proxies(c, 0.01, rate=rate, only={1})
        try:
            c.start(1)
            c.import_keys(1, values.items())
            yield c
        finally:
            os.killpg(proxy.pid, 9)


def wait_caught_up(c, since, values):
    """Waits (180 s) until node2's digest is node1's and checks it holds exactly `values`;
    returns the seconds from `since`."""
    took, statuses, _ = c.wait_converged(since, timeout=180)
    if took is None:
        raise Failure(f"node2 did not catch up in 180 s: {statuses[2] and statuses[2]['entryCount']} entries")
    held = c.stored_entries(2, "big")
    if {key: value for key, (_, _, value) in held.items()} != values:
        raise Failure(f"node2 holds {sorted(held)} after converging, not the {len(values)} values")
    return took


def scenario_slow_catch_up(ctx, binary):
    """node2 starts empty behind a link of 100 kB/s to node1 (a proxy node1 advertises), which
    holds three values of 700 KB, and waits 1 s for a sync chunk (`--sync-chunk-timeout 1`:
    then 2 s, then 4 s). Each chunk takes 7 s to cross, so every sync times out: node2 lists a
    `sync` problem naming node1 (a warning: `health` still exits 0), keeps the chunks that come
    late, holds the three values in the end, and the problem clears. Before, nothing was listed,
    and those chunks were dropped: a node behind a link that slow never caught up. Each retry
    repeats the request, and node1 leaves out of its reply what it already queued for it: the
    three values cross once. Before, each retry's full reply crossed behind the last one's
    (three or four times the data, the link busy for a minute after the catch-up)."""
    values = {f"big{i}": {"blob": f"{i}" * 700_000} for i in range(3)}
    with behind_a_slow_member(binary, "slow-catch-up", 100_000, values) as c:
        import scale
        t = time.monotonic()
        cpu_before = scale.cpu_seconds(c.nodes[1].process.pid)
        c.start(2)
        listed = None
        if wait_for(lambda: sync_problem(c.status(2), "node1") is not None, 90, step=0.2):
            listed = time.monotonic() - t
            problem = sync_problem(c.status(2), "node1")
            health = c.client(2, ["health"])
            if health.returncode != 0 or "warning: sync node1" not in health.stdout:
                raise Failure(f"health of node2 with the sync problem: exit {health.returncode}, {health.stdout.strip()!r}")
            ctx.say(f"node2 listed the sync problem after {listed:.1f} s: {problem['message'][:160]}...")
        else:
            raise Failure(f"node2 never listed a sync problem; its problems: {(c.status(2) or {}).get('problems')}")
        took = wait_caught_up(c, t, values)
        # node1's replies wait on a queue that drains at the link's pace, which must cost it
        # next to nothing. (Three chunks never fill its queue of 8, so this run did not show
        # the busy loop an outside test found with 20 values: 50-90% of a core, re-reading
        # each turn; `SyncResponderTests` covers the held chunks that ended it.)
        busy = (scale.cpu_seconds(c.nodes[1].process.pid) - cpu_before) / took
        if busy > 0.3:
            raise Failure(f"node1 used {busy:.0%} of a core while serving the slow catch-up")
        cleared = wait_for(lambda: sync_problem(c.status(2), "node1") is None, 60, step=0.2)
        if not cleared:
            raise Failure(f"the sync problem stayed after node2 caught up: {sync_problem(c.status(2), 'node1')}")
        cleared_after = time.monotonic() - t - took
        # Nothing more crosses: the sync entries node2 received stop at the three values
        # (a resent one would come within a chunk's 7 s).
        last, since = counter(c.status(2), "syncEntriesReceived"), time.monotonic()
        while time.monotonic() - since < 10 and time.monotonic() - t < took + 90:
            time.sleep(0.5)
            received = counter(c.status(2), "syncEntriesReceived")
            if received != last:
                last, since = received, time.monotonic()
        resumed = counter(c.status(1), "syncRetriesResumed") or 0
        if last is None or last > len(values) or resumed < 1:
            raise Failure(f"node2 received {last} sync entries for {len(values)} values (node1 resumed {resumed} retries): "
                          "retries' replies crossed the slow link again")
        ctx.say(f"node2 caught up in {took:.1f} s (2.1 MB at 100 kB/s: 21 s at best), node1 used {busy:.0%} of a "
                f"core meanwhile, the problem cleared {cleared_after:.1f} s later, and the values crossed "
                f"once ({last} sync entries received; node1 resumed {resumed} retries)")


def scenario_slow_catch_up_held(ctx, binary):
    """As `slow-catch-up`, with more of the member's reply than its queue holds: node2 starts
    empty behind 500 kB/s from node1, which holds twenty values of 700 KB (a chunk each: eight
    fill node1's queue to node2, a few more the sockets' buffers, the rest wait, held, encoded),
    and waits 1 s for a chunk (a chunk takes 1.4 s). The retry comes while chunks are held:
    node1 leaves out only the buckets whose every key went out, and sends the rest. node2 ends
    with all twenty values, having received each about once. (A reply that counted buckets by
    the position of the keys read, when SQLite reads them in key order, could leave one out for
    good.) node1's queue takes more only once half of it drained, four chunks: 5.6 s with
    nothing queued, longer than node1's 4 s of patience. The reply is not given up for that
    (nothing else wants its place), and the retry continues it: before, node1 dropped it, node2
    waited out its own patience, and the retry's reply read again what had been held."""
    values = {f"big{i:02d}": {"blob": chr(97 + i) * 700_000} for i in range(20)}
    with behind_a_slow_member(binary, "slow-held", 500_000, values) as c:
        t = time.monotonic()
        c.start(2)
        took = wait_caught_up(c, t, values)
        received = counter(c.status(2), "syncEntriesReceived")
        resumed = counter(c.status(1), "syncRetriesResumed") or 0
        if resumed < 1:
            raise Failure("node2's syncs never timed out (node1 resumed no retry): the scenario did not test a retry")
        # Each value about once: a retry continues the reply in progress, or leaves out what it
        # queued (one more for a value whose chunk was read but held when a reply ended).
        if received is None or received > len(values) + 1:
            raise Failure(f"node2 received {received} sync entries for {len(values)} values: replies crossed again")
        with open(os.path.join(c.root, "node1.log")) as log:
            abandoned = [line.strip() for line in log if "abandoned" in line]
        if abandoned:
            raise Failure(f"node1 gave up its reply to node2 while nothing else wanted its place: {abandoned[0]}")
        ctx.say(f"node2 caught up in {took:.1f} s (14 MB at 500 kB/s: 28 s at best) with {received} sync entries "
                f"received for {len(values)} values; node1 resumed {resumed} retries")


def scenario_leave_slow(ctx, binary):
    """node3 is reached through a proxy with 100 ms of one-way delay (it advertises the proxy);
    it writes 5,000 keys and 20 increments, then runs `leave` at once: when it returns, every
    member already holds all of them. Its updates go out on its PUB, through the proxy; its
    departure goes on its DEALER straight to the members. Before the hand-off, the departure
    overtook the last updates, was acknowledged, the members hung up, and the writes never
    arrived (found by an outside tester)."""
    advertise = lambda k: "127.0.2.3:7000" if k == 3 else None
    with Cluster(binary, 3, "leave-slow", advertise=advertise) as c:
        proxy = start_delay_proxies(c, 0.1)
        try:
            c.start_all(wait_alive=False)
            c.wait_all_alive(timeout=45)
            expected = {f"handed-{i:05d}": {"n": i} for i in range(5000)}
            c.import_keys(3, expected.items())
            for _ in range(20):
                result = c.client(3, ["incr", "handed"])
                if result.returncode != 0:
                    raise Failure(f"incr on node3 failed: {result.stderr.strip()}")
            t = time.monotonic()
            result = c.leave(3, timeout=40)
            took = time.monotonic() - t
            if result.returncode != 0:
                raise Failure(f"leave failed (exit {result.returncode}): {result.stderr.strip()} {result.stdout.strip()}")
            # No waiting: what leave promised must hold now.
            for k in (1, 2):
                held = len(c.stored_entries(k, "handed-"))
                counter = c.client(k, ["counter", "handed"]).stdout.strip()
                if held != len(expected) or counter != "20":
                    raise Failure(f"right after leave returned, node{k} holds {held} of {len(expected)} keys and counter {counter!r} (want 20)")
            ctx.say(f"leave returned in {took:.2f} s over a 100 ms link ({result.stdout.strip()}); "
                    f"node1 and node2 already held all 5,000 keys and the 20 increments")
        finally:
            os.killpg(proxy.pid, 9)


class BridgedCluster(Cluster):
    """Nodes in namespaces of their own, joined by a bridge (a LAN segment): what discovery by
    UDP broadcast needs. Node K is 10.77.0.K/24 in namespace NS-K; the bridge lives in NS-b."""

    def __enter__(self):
        super().__enter__()
        try:
            self.bridge_ns = self.namespace + "-b"
            run(["ip", "netns", "add", self.bridge_ns])
            self.extra_namespaces = [self.bridge_ns]
            run(["ip", "netns", "exec", self.bridge_ns, "ip", "link", "add", "br0", "type", "bridge"])
            run(["ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", "br0", "up"])
            for node in self.nodes.values():
                ns = f"{self.namespace}-{node.index}"
                run(["ip", "netns", "add", ns])
                self.extra_namespaces.append(ns)
                a, b = f"rv{os.getpid() % 10000}{node.index}a", f"rv{os.getpid() % 10000}{node.index}b"
                run(["ip", "link", "add", a, "netns", ns, "type", "veth", "peer", "name", b, "netns", self.bridge_ns])
                run(["ip", "netns", "exec", ns, "ip", "addr", "add", f"10.77.0.{node.index}/24", "dev", a])
                run(["ip", "netns", "exec", ns, "ip", "link", "set", a, "up"])
                run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])
                run(["ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", b, "master", "br0"])
                run(["ip", "netns", "exec", self.bridge_ns, "ip", "link", "set", b, "up"])
                node.address = f"10.77.0.{node.index}"
                node.namespace = ns
        except BaseException:
            self.close()
            raise
        return self

    def close(self):
        for ns in getattr(self, "extra_namespaces", []):
            for pid in run(["ip", "netns", "pids", ns], check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)
        self.extra_namespaces = []
        super().close()


def scenario_discovery(ctx, binary):
    """Three nodes on one bridged LAN segment, no --peer at all, --discover: they find each
    other by beacon (and, under CURVE, admit each other by trusted key) and replicate."""
    with BridgedCluster(binary, 3, "discover", seeds=lambda k: [], extra_args=lambda k: ["--discover"]) as c:
        t = time.monotonic()
        c.start_all(wait_alive=False)
        c.wait_all_alive(timeout=20)
        found = time.monotonic() - t
        w = Workload(c, [f"d{i}" for i in range(4)], writers=2).start()
        time.sleep(3.0)
        w.stop()
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="the last write")
        verify(ctx, c, w)
        ctx.say(f"found each other by beacon and all alive {found:.2f} s after start (process start included)")


def scenario_catch_up_volume(ctx, binary):
    """node3 is paused (SIGSTOP) for 30 s while 100,000 updates are written on node1 and node2;
    once resumed it catches up once: it receives at most 1.2 x the size of what it missed."""
    with Cluster(binary, 3, "volume") as c:
        c.start_all()
        before = c.status(3)
        c.pause(3)
        paused = time.monotonic()
        ctx.say("SIGSTOP node3")
        value = {"pad": "x" * 180}
        written = {}
        for k, prefix in ((1, "v1"), (2, "v2")):
            items = [(f"{prefix}-{i:06d}", dict(value, n=i)) for i in range(50_000)]
            c.import_keys(k, items, timeout=120)
            written.update(items)
        ctx.say(f"imported 100,000 keys on node1 and node2 in {time.monotonic() - paused:.1f} s")
        while time.monotonic() - paused < 30.0:
            time.sleep(0.5)
        c.resume(3)
        resumed = time.monotonic()
        converge(ctx, c, resumed, 30.0, what="SIGCONT")
        after = c.status(3)

        def received(status):
            return sum(p["bytesReceived"]["published"] + p["bytesReceived"]["sync"] + p["bytesReceived"]["repair"]
                       for p in status["peers"])

        got = received(after) - received(before)
        # What it missed, as entry records on the wire: 8 (HLC) + 1 + writer + 1 (flags) + 2 (schema)
        # + 2 + key + 4 + value (docs/protocol.md).
        missed = sum(8 + 1 + 5 + 1 + 2 + 2 + len(key) + 4 + len(json.dumps(v, separators=(",", ":")))
                     for key, v in written.items())
        ratio = got / missed
        per_peer = {p["id"]: p["bytesReceived"] for p in after["peers"]}
        ctx.say(f"node3 received {got / 1e6:.1f} MB for {missed / 1e6:.1f} MB missed: {ratio:.2f} x (bound 1.2 x); {per_peer}")
        ctx.figures["catch_up_ratio"] = ratio
        if ratio > 1.2:
            raise Failure(f"node3 received {ratio:.2f} x what it missed")


def scenario_scale(ctx, binary):
    """Clusters of 3, 8 and 16 nodes (node1 the only seed): all form, every node holds a burst of
    1,000 writes, no write lost; reports time, CPU per update, sockets and memory per node."""
    import scale
    rows = [scale.measure(binary, size, 1000, log=ctx.say) for size in (3, 8, 16)]
    ctx.figures["convergence_s"] = max(r["burst_everywhere_s"] for r in rows)
    for line in scale.table(rows, 1000).splitlines():
        ctx.say(line)


SCENARIOS = [
    ("join-runtime", scenario_join_runtime),
    ("rejoin", scenario_rejoin),
    ("leave", scenario_leave),
    ("leave-together", scenario_leave_together),
    ("leave-slow", scenario_leave_slow),
    ("forget", scenario_forget),
    ("revoke", scenario_revoke),
    ("bridge-partition", scenario_bridge_partition),
    ("slow-links", scenario_slow_links),
    ("slow-catch-up", scenario_slow_catch_up),
    ("slow-catch-up-held", scenario_slow_catch_up_held),
    ("discovery", scenario_discovery),
    ("catch-up-volume", scenario_catch_up_volume),
    ("scale", scenario_scale),
]
