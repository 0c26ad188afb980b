"""Clock scenarios for faults.py: a node whose clock runs 120 s ahead (faketime) refuses to write
rather than reorder history, is named by the others, writes again within seconds once its clock
is fixed (without a restart), and after a restart stamps from its fixed clock."""

import json
import os
import shutil
import time

from harness import Cluster

# The faults.py helpers, given by faults.py itself (it imports this module).
converge = wait_for = Failure = None
DEFAULT_BOUND = 10.0


def scenario_clock_skew(ctx, binary):
    """node3's wall clock runs 120 s ahead (faketime): its writes are refused with the offset,
    node1 and node2 name it, no write of it overwrites a later one; its clock fixed, it writes
    again within 5 s without a restart; restarted, it stamps near true time."""
    with Cluster(binary, 3, "clock") as c:
        spec = os.path.join(c.root, "faketime")
        with open(spec, "w") as f:
            f.write("+120s\n")
        # The faketime wrapper keeps a Swift binary's arguments (LD_PRELOAD alone loses them);
        # `env -u FAKETIME` makes libfaketime take the offset from the file, re-read on each
        # call, so the clock can be fixed while the node runs. The monotonic clock stays true.
        c.nodes[3].wrapper = ["faketime", "-f", "+120s", "env", "-u", "FAKETIME"]
        c.nodes[3].env = {"FAKETIME_TIMESTAMP_FILE": spec, "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        c.start_all(wait_alive=False)
        c.wait_all_alive()
        refused = c.client(3, ["set", "rt", '"from node3, clock ahead"'])
        ctx.say(f"write on node3 right after start: exit {refused.returncode}: {refused.stderr.strip()}")
        if refused.returncode != 1 or "clock" not in refused.stderr:
            raise Failure("node3 acknowledged a write with its clock 120 s ahead")
        written = c.client(1, ["set", "rt", '"from node1"', "--json"])
        if written.returncode != 0:
            raise Failure(f"node1's write failed: {written.stderr.strip()}")
        named = wait_for(lambda: any(p["kind"] == "peerClock" and p["subject"] == "node3"
                                     for p in (c.status(1) or {}).get("problems", [])), 10)
        if not named:
            raise Failure("node1 does not name node3's clock as a problem")
        offset = next(p for p in c.status(1)["peers"] if p["id"] == "node3")["clockOffsetMillis"]
        health = c.client(3, ["health"])
        ctx.say(f"node1 names node3's clock ({offset / 1000:+.1f} s); node3's health exits {health.returncode}: "
                f"{health.stdout.strip().splitlines()[0] if health.stdout.strip() else ''}")
        if health.returncode != 1 or abs(offset - 120_000) > 5_000:
            raise Failure("node3's health must fail and node1 must measure about +120 s")

        with open(spec, "w") as f:
            f.write("+0s\n")
        fixed = time.monotonic()
        ok = wait_for(lambda: c.client(3, ["set", "after-fix", '"node3"']).returncode == 0, 10, step=0.2)
        flowed = time.monotonic() - fixed
        if not ok or flowed > 5.0:
            raise Failure(f"node3's writes did not flow again within 5 s of its clock being fixed ({flowed:.1f} s)")
        ctx.say(f"clock fixed: node3 writes again {flowed:.2f} s later, without a restart")
        converge(ctx, c, time.monotonic(), DEFAULT_BOUND, what="the clock fix")
        values = {k: json.loads(c.client(k, ["get", "rt", "--json"]).stdout)["value"] for k in c.nodes}
        if set(values.values()) != {"from node1"}:
            raise Failure(f"rt is {values}: a write of the skewed node overwrote a later one")
        ctx.say("rt holds node1's write everywhere: nothing node3 tried while skewed overwrote it")

        c.stop_group(3)
        c.nodes[3].wrapper, c.nodes[3].env = [], {}
        c.start(3)
        c.wait_all_alive()
        before = time.time()
        stamped = c.client(3, ["set", "after-restart", '"node3"', "--json"])
        if stamped.returncode != 0:
            raise Failure(f"node3's write after the restart failed: {stamped.stderr.strip()}")
        wall = (int(json.loads(stamped.stdout)["hlc"]) >> 16) / 1000
        ctx.say(f"restarted with a true clock: its write is stamped {wall - before:+.2f} s from true time")
        if abs(wall - before) > 2.0:
            raise Failure(f"node3 stamps {wall - before:+.1f} s from true time after its restart")


def scenario_wiped_behind(ctx, binary):
    """node2 writes a key, its data directory is wiped, and it starts again with its clock 20 s
    behind (faketime; within the drift limit, so nothing flags it) and `--require-clock-check`,
    behind a link of 500 kB/s to node1 (a proxy node1 advertises), which holds 4.2 MB it must
    catch up on. It writes the key anew as soon as it may, while the catch-up still runs (the
    clock check needs only heartbeats): that write must win on both nodes. Before 0.33.0 it was
    stamped from its clock, below the write of its earlier life, which then won everywhere
    (helper-88); now it has taken node1's heartbeat clock in first."""
    import membership
    advertise = lambda k: "127.0.2.1:7000" if k == 1 else None
    extra = lambda k: ["--require-clock-check"] if k == 2 else []
    values = {f"big{i}": {"blob": chr(97 + i) * 700_000} for i in range(6)}
    with Cluster(binary, 2, "wiped", advertise=advertise, extra_args=extra) as c:
        proxy = membership.start_delay_proxies(c, 0.001, rate=500_000, only={1})
        try:
            c.start(1)
            c.import_keys(1, values.items())
            c.start(2)
            c.wait_all_alive()
            before = c.client(2, ["set", "wk", '"before the wipe"', "--json"])
            if before.returncode != 0:
                raise Failure(f"node2's first write failed: {before.stderr.strip()}")
            old = int(json.loads(before.stdout)["hlc"])
            converge(ctx, c, time.monotonic(), 60.0, what="node2's catch-up and first write")

            c.stop_group(2)
            shutil.rmtree(c.nodes[2].data)
            os.makedirs(c.nodes[2].data)
            c.nodes[2].wrapper = ["faketime", "-f", "-20s"]
            c.nodes[2].env = {"FAKETIME_DONT_FAKE_MONOTONIC": "1", "NO_FAKE_STAT": "1"}
            started = time.monotonic()
            c.start(2)
            after = None

            def write():
                nonlocal after
                result = c.client(2, ["set", "wk", '"after the wipe"', "--json"])
                after = result if result.returncode == 0 else None
                return after is not None
            if not wait_for(write, 20, step=0.05):
                raise Failure("node2 never accepted the write after the wipe")
            new = int(json.loads(after.stdout)["hlc"])
            held = (c.status(2) or {}).get("entryCount", 0)
            ctx.say(f"wiped node2 at -20 s wrote {time.monotonic() - started:.2f} s after its start, holding {held} of "
                    f"{len(values) + 1} entries; stamped {((new >> 16) - (old >> 16)) / 1000:+.3f} s from its write before "
                    "the wipe")
            if held > len(values):
                raise Failure("node2 had caught up before it wrote: the scenario did not test a write during the catch-up")
            if new <= old:
                raise Failure(f"node2's write after the wipe is stamped {new}, not above its earlier write's {old}")
            converge(ctx, c, time.monotonic(), 60.0, what="the write after the wipe")
            found = {k: json.loads(c.client(k, ["get", "wk", "--json"]).stdout)["value"] for k in c.nodes}
            if set(found.values()) != {"after the wipe"}:
                raise Failure(f"wk is {found}: the write of node2's earlier life won")
            ctx.say("wk holds the write made after the wipe on both nodes")
        finally:
            os.killpg(proxy.pid, 9)


SCENARIOS = [
    ("clock-skew", scenario_clock_skew),
    ("wiped-behind", scenario_wiped_behind),
]
