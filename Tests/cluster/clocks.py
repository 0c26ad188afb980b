"""Clock scenarios for faults.py: a node whose clock runs 120 s ahead (faketime) refuses to write
rather than reorder history, is named by the others, writes again within seconds once its clock
is fixed (without a restart), and after a restart stamps from its fixed clock."""

import json
import os
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


SCENARIOS = [
    ("clock-skew", scenario_clock_skew),
]
