#!/usr/bin/env bash
# Builds Coffee Tracker and runs two of its processes as a two-node cluster on loopback. Each
# records 1,000 visits and 50 drinks; alice also sets the daily limit. Both must converge (every
# visit, every drink in date order, alice's limit, equal digests) before the deadline.
# Exits 0 when both do, nonzero otherwise (with both logs printed).
set -euo pipefail
cd "$(dirname "$0")"
VISITS=${VISITS:-1000}
DRINKS=${DRINKS:-50}
DEADLINE=${DEADLINE:-120}

swift build --product CoffeeTracker
binary="$(swift build --show-bin-path)/CoffeeTracker"

# Two free port pairs below the ephemeral range (a node uses PORT and PORT + 1).
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_base() {
  for _ in $(seq 1 200); do
    local base=$(( 20000 + (RANDOM % 4000) * 2 ))
    if ! in_use "$base" && ! in_use $((base + 1)) && ! in_use $((base + 2)) && ! in_use $((base + 3)); then
      echo "$base"; return 0
    fi
  done
  echo "no free ports" >&2; return 1
}
base=$(pick_base)
alice="127.0.0.1:$base"
bob="127.0.0.1:$((base + 2))"

work=$(mktemp -d)
trap 'kill $pid_a $pid_b 2>/dev/null || true; rm -rf "$work"' EXIT
expect=(--expect-visits $((VISITS * 2)) --expect-drinks $((DRINKS * 2)) --expect-limit 300 --timeout "$DEADLINE")

"$binary" --id alice --node-index 0 --listen "$alice" --peer "$bob" --data "$work/alice" \
  --visits "$VISITS" --drinks "$DRINKS" --daily-limit 300 "${expect[@]}" > "$work/alice.log" 2>&1 &
pid_a=$!
"$binary" --id bob --node-index 1 --listen "$bob" --peer "$alice" --data "$work/bob" \
  --visits "$VISITS" --drinks "$DRINKS" "${expect[@]}" > "$work/bob.log" 2>&1 &
pid_b=$!

status=0
wait "$pid_a" || status=$?
wait "$pid_b" || status=$?
cat "$work/alice.log" "$work/bob.log"
if [ "$status" -ne 0 ]; then
  echo "Coffee Tracker: the two processes did not converge (exit $status)" >&2
  exit 1
fi
echo "Coffee Tracker: both processes converged"
