#!/bin/bash
# What periodic syncs carry under steady writes (docs/performance.md, "Sync replies under steady
# writes"). Two nodes on loopback (ports 7301-7304); node n1 is the only writer and imports the
# same 100,000 keys (~100 B values) in a loop for SECONDS; both nodes' sync counters are printed
# at SNAPSHOT seconds (past the 120 s after start within which a node's own writes are never
# left out) and at the end. The delta between the two is what the later periodic checks carried.
#
#   bash Tests/cluster/periodic_sync_load.sh .build/release/replica-node 320 140
set -euo pipefail
BIN=$(realpath "${1:?usage: periodic_sync_load.sh BINARY [SECONDS] [SNAPSHOT]}")
SECS=${2:-320}
SNAP=${3:-140}
WORK=$(mktemp -d /tmp/replica-periodic-sync.XXXXXX)
trap 'kill $P1 $P2 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 -c '
import json
for i in range(100000):
    print(json.dumps({"key": "k%06d" % i, "value": "x" * 80}))' > "$WORK/keys.jsonl"
"$BIN" serve --id n1 --listen 127.0.0.1:7301 --data "$WORK/n1" --insecure --peer 127.0.0.1:7303 > "$WORK/n1.log" 2>&1 &
P1=$!
"$BIN" serve --id n2 --listen 127.0.0.1:7303 --data "$WORK/n2" --insecure --peer 127.0.0.1:7301 > "$WORK/n2.log" 2>&1 &
P2=$!
counters() {
    echo "$1"
    for node in n1 n2; do
        "$BIN" status --json --data "$WORK/$node" | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print("  '"$node"': sync entries received %d, left out for requesters %d, requests served %d"
      % (c["syncEntriesReceived"], c.get("syncEntriesLeftOut", 0), c["syncRequestsServed"]))'
    done
}
until "$BIN" health --data "$WORK/n1" > /dev/null 2>&1 && "$BIN" health --data "$WORK/n2" > /dev/null 2>&1; do sleep 0.2; done
start=$SECONDS; imports=0; snapped=0
while [ $((SECONDS - start)) -lt "$SECS" ]; do
    "$BIN" import "$WORK/keys.jsonl" --data "$WORK/n1" > /dev/null
    imports=$((imports + 1))
    if [ $snapped = 0 ] && [ $((SECONDS - start)) -ge "$SNAP" ]; then
        snapped=1
        counters "at $((SECONDS - start)) s ($imports imports of 100,000 keys):"
    fi
done
counters "at $((SECONDS - start)) s ($imports imports of 100,000 keys):"
