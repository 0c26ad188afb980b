#!/bin/bash
# What periodic syncs carry under steady writes (docs/performance.md, "Sync replies under steady
# writes"). NODES nodes on loopback (ports 7301, 7303, ...), each peered with every other; node
# n1 is the only writer and imports the same KEYS keys (~100 B values) in a loop for SECONDS;
# every node's sync counters are printed at SNAPSHOT seconds (past the 120 s after start within
# which a node's own writes are never left out) and at the end. The delta between the two is what
# the later periodic checks carried. With 3 nodes, what n2 and n3 send each other is n1's
# writes: a third writer's, for both.
#
# KEYS (environment, 100000 by default) sets how many keys each import writes, and PAUSE
# (seconds, 0 by default) a rest after each: KEYS=5000 PAUSE=1 is a steady load the members keep
# up with, where the default saturates them.
#
#   bash Tests/cluster/periodic_sync_load.sh .build/release/replica-node 320 140 [NODES]
#   KEYS=5000 PAUSE=1 bash Tests/cluster/periodic_sync_load.sh .build/release/replica-node 260 140 3
set -euo pipefail
BIN=$(realpath "${1:?usage: periodic_sync_load.sh BINARY [SECONDS] [SNAPSHOT] [NODES]}")
SECS=${2:-320}
SNAP=${3:-140}
NODES=${4:-2}
WORK=$(mktemp -d /tmp/replica-periodic-sync.XXXXXX)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
KEYS=${KEYS:-100000}
PAUSE=${PAUSE:-0}
python3 -c '
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"key": "k%06d" % i, "value": "x" * 80}))' "$KEYS" > "$WORK/keys.jsonl"
for i in $(seq 1 "$NODES"); do
    peers=()
    for j in $(seq 1 "$NODES"); do
        [ "$j" = "$i" ] || peers+=(--peer "127.0.0.1:$((7299 + 2 * j))")
    done
    "$BIN" serve --id "n$i" --listen "127.0.0.1:$((7299 + 2 * i))" --data "$WORK/n$i" --insecure "${peers[@]}" > "$WORK/n$i.log" 2>&1 &
    PIDS+=($!)
done
counters() {
    echo "$1"
    for i in $(seq 1 "$NODES"); do
        "$BIN" status --json --data "$WORK/n$i" | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print("  '"n$i"': sync entries received %d, left out for requesters %d, requests served %d"
      % (c["syncEntriesReceived"], c.get("syncEntriesLeftOut", 0), c["syncRequestsServed"]))'
    done
}
for i in $(seq 1 "$NODES"); do
    until "$BIN" health --data "$WORK/n$i" > /dev/null 2>&1; do sleep 0.2; done
done
start=$SECONDS; imports=0; snapped=0
while [ $((SECONDS - start)) -lt "$SECS" ]; do
    "$BIN" import "$WORK/keys.jsonl" --data "$WORK/n1" > /dev/null
    imports=$((imports + 1))
    sleep "$PAUSE"
    if [ $snapped = 0 ] && [ $((SECONDS - start)) -ge "$SNAP" ]; then
        snapped=1
        counters "at $((SECONDS - start)) s ($imports imports of $KEYS keys):"
    fi
done
counters "at $((SECONDS - start)) s ($imports imports of $KEYS keys):"
# Once the writes stop, every node must reach the same digest (within 120 s): nothing that a
# requester lacked was left out of a reply.
deadline=$((SECONDS + 120))
while :; do
    digests=$(for i in $(seq 1 "$NODES"); do
        "$BIN" status --json --data "$WORK/n$i" | python3 -c 'import json, sys; print(json.load(sys.stdin)["digest"])'
    done | sort -u | wc -l)
    if [ "$digests" = 1 ]; then
        echo "converged: all $NODES nodes show the same digest $((SECONDS - start - SECS)) s after the writes stopped"
        break
    fi
    if [ $SECONDS -ge $deadline ]; then
        echo "NOT converged 120 s after the writes stopped: $digests different digests" >&2
        exit 1
    fi
    sleep 1
done
