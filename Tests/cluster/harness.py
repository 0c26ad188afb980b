"""Building blocks of the fault tests: a cluster of `replica-node serve` processes inside a
private network namespace, iptables faults, a write workload and a Jepsen-style checker.

Python 3 standard library only. Everything here needs root (network namespaces, iptables);
`faults.py` checks that first and skips with a printed reason otherwise.

Addresses: node K listens on 127.0.1.K:PORT (PUB) and PORT+1 (ROUTER) inside the namespace,
and its outgoing connections use 127.0.1.K as source address, so an iptables rule
`-s 127.0.1.A -d 127.0.1.B` matches exactly the packets node A sends to node B (including
TCP replies on connections B opened to A). Client commands reach a node through the Unix
control socket in its data directory, which works from outside the namespace and is never
touched by the network faults.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sqlite3
import tempfile
import threading
import time

# Every cluster still running, so that an exit path that skips `finally` can still clean up.
LIVE_CLUSTERS = set()
# When set (faults.py --keep-logs DIR), node logs are copied to DIR/<cluster name>-<n>/ on close.
KEEP_LOGS = None


def run(cmd, timeout=10, check=True, input=None):
    """Runs a short command and returns CompletedProcess (text mode)."""
    result = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip() or result.stdout.strip()}")
    return result


def version_key(hlc, node):
    """Versions are totally ordered by (HLC as an integer, node id)."""
    return (int(hlc), str(node))


class Node:
    def __init__(self, index, address, port, data):
        self.index = index
        self.id = f"node{index}"
        self.address = address
        self.port = port
        self.data = data
        self.process = None
        self.paused = False
        self.starts = 0
        # The network namespace the node runs in (None: the cluster's own).
        self.namespace = None
        # A command the node runs under (e.g. faketime), and environment variables for it.
        self.wrapper = []
        self.env = {}
        # Another replica-node binary for this node (a previous release), None: the cluster's.
        self.binary = None

    @property
    def listen(self):
        return f"{self.address}:{self.port}"


class Cluster:
    """N nodes in a namespace of their own; by default each names every other as a seed.

    Use as a context manager: leaving it (normally, by exception, or by SIGINT/SIGTERM turned
    into an exception by faults.py) kills the nodes, deletes the namespace and the temp dir.
    """

    def __init__(self, binary, size=3, name="x", port=7000, log=print, seeds=None, advertise=None, extra_args=None):
        """`seeds(k)`: the nodes node k names with --peer (default: every other node);
        `advertise(k)`: its --advertise HOST:PORT (default, or None: none); `extra_args(k)`: more flags."""
        self.binary = binary
        self.size = size
        self.port = port
        self.log = log
        self.name = name
        self.seeds = seeds
        self.advertise = advertise
        self.extra_args = extra_args
        self.namespace = f"replica-faults-{os.getpid()}-{name}"[:60]
        self.root = None
        self.nodes = {}
        self.rules = []
        self.namespace_created = False

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        LIVE_CLUSTERS.add(self)
        try:
            self.root = tempfile.mkdtemp(prefix="replica-faults-")
            run(["ip", "netns", "add", self.namespace])
            self.namespace_created = True
            self.ns(["ip", "link", "set", "lo", "up"])
            for _ in range(self.size):
                self.add_node()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for node in self.nodes.values():
            self._terminate(node)
        if self.namespace_created:
            # Anything still alive in our own namespace was started by us.
            pids = run(["ip", "netns", "pids", self.namespace], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            for _ in range(50):
                if run(["ip", "netns", "del", self.namespace], check=False).returncode == 0:
                    break
                time.sleep(0.1)
            self.namespace_created = False
        if self.root and KEEP_LOGS:
            n = 1
            while os.path.exists(os.path.join(KEEP_LOGS, f"{self.name}-{n}")):
                n += 1
            target = os.path.join(KEEP_LOGS, f"{self.name}-{n}")
            os.makedirs(target)
            for k in self.nodes:
                log = os.path.join(self.root, f"node{k}.log")
                if os.path.exists(log):
                    shutil.copy(log, target)
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
        LIVE_CLUSTERS.discard(self)

    def _terminate(self, node):
        process = node.process
        if process is None or process.poll() is not None:
            return
        try:
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
        node.paused = False

    def add_node(self):
        """Makes node N+1 (data directory and CURVE key; every node trusts every key in the
        shared trust directory, re-read while running); returns its number. Not started."""
        k = max(self.nodes, default=0) + 1
        data = os.path.join(self.root, f"node{k}")
        os.makedirs(data)
        self.nodes[k] = Node(k, f"127.0.1.{k}", self.port, data)
        # Real CURVE keys, as production runs.
        run([self.binary, "keygen", "--id", self.nodes[k].id, "--out", os.path.join(self.root, "keys")])
        return k

    def ns(self, cmd, **kwargs):
        return run(["ip", "netns", "exec", self.namespace] + cmd, **kwargs)

    # ---- nodes -----------------------------------------------------------------------------

    def start(self, k, wait=True):
        """Starts node k (same data dir on a restart) inside the namespace."""
        node = self.nodes[k]
        if node.process is not None and node.process.poll() is None:
            raise RuntimeError(f"{node.id} is already running")
        cmd = ["ip", "netns", "exec", node.namespace or self.namespace] + node.wrapper + [self.binary_of(k), "serve",
               "--id", node.id, "--listen", node.listen, "--data", node.data,
               "--key", os.path.join(self.root, "keys", f"{node.id}.key"),
               "--trust", os.path.join(self.root, "keys")]
        seeds = self.seeds(k) if self.seeds else [j for j in self.nodes if j != k]
        for j in seeds:
            other = self.nodes[j]
            address = (self.advertise(j) if self.advertise else None) or other.listen
            cmd += ["--peer", f"{other.id}@{address}"]
        if self.advertise and self.advertise(k):
            cmd += ["--advertise", self.advertise(k)]
        if self.extra_args:
            cmd += self.extra_args(k)
        if os.environ.get("REPLICA_FAULTS_LOG_LEVEL"):
            cmd += ["--log-level", os.environ["REPLICA_FAULTS_LOG_LEVEL"]]
        node.starts += 1
        logfile = open(os.path.join(self.root, f"{node.id}.log"), "a")
        logfile.write(f"---- start #{node.starts} at {time.time():.3f}\n")
        logfile.flush()
        # `ip netns exec` execs the binary: the pid we hold is the node's own.
        node.process = subprocess.Popen(cmd, stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, env=dict(os.environ, **node.env) if node.env else None)
        logfile.close()
        node.paused = False
        if wait:
            self.wait_ready(k)

    def start_all(self, wait_alive=True):
        for k in self.nodes:
            self.start(k, wait=False)
        for k in self.nodes:
            self.wait_ready(k)
        if wait_alive:
            self.wait_all_alive()

    def wait_ready(self, k, timeout=15):
        node = self.nodes[k]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.process.poll() is not None:
                raise RuntimeError(f"{node.id} exited with {node.process.returncode}; log:\n{self.log_tail(k)}")
            if self.status(k, timeout=2) is not None:
                return
            time.sleep(0.05)
        raise RuntimeError(f"{node.id} did not answer status within {timeout} s")

    def wait_all_alive(self, timeout=15):
        """Waits until every running node sees every other running node alive."""
        running = [k for k in self.nodes if self.is_running(k)]
        ids = {self.nodes[k].id for k in running}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            statuses = self.statuses(running)
            if all(s is not None and ids - {s["id"]} <= {p.get("id") for p in s["peers"] if p["state"] == "alive"}
                   for s in statuses.values()):
                return
            time.sleep(0.05)
        raise RuntimeError("nodes did not see each other alive in time")

    def is_running(self, k):
        process = self.nodes[k].process
        return process is not None and process.poll() is None

    def stop_group(self, k, sig=signal.SIGTERM, timeout=10):
        """Signals node k's whole process group (a wrapper such as faketime and the node under
        it) and waits for it."""
        node = self.nodes[k]
        os.killpg(node.process.pid, sig)
        code = node.process.wait(timeout=timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.status(k, timeout=1) is not None:
            time.sleep(0.05)
        return code

    def kill(self, k):
        """kill -9: no graceful shutdown, no flush beyond what SQLite already committed."""
        node = self.nodes[k]
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(timeout=5)
        node.paused = False

    def stop(self, k, timeout=10):
        """SIGTERM: graceful stop (queued writes committed); returns the exit code."""
        node = self.nodes[k]
        node.process.send_signal(signal.SIGTERM)
        code = node.process.wait(timeout=timeout)
        node.paused = False
        return code

    def wipe(self, k):
        """Deletes node k's data directory entirely (a wiped disk); the node must be stopped.
        `serve` creates the directory again on the next start, with a new incarnation."""
        if self.is_running(k):
            raise RuntimeError(f"{self.nodes[k].id} is running; stop it before wiping its data")
        shutil.rmtree(self.nodes[k].data)

    def incarnation(self, k):
        """Node k's current incarnation (lowercase UUID)."""
        s = self.status(k)
        if s is None:
            raise RuntimeError(f"{self.nodes[k].id} did not answer status")
        return s["incarnation"].lower()

    def counter_slot(self, k):
        """The id of node k's counter slots, as `counter --json` shows it: its incarnation, or a
        new id after a run that did not stop cleanly (status's `counterSlot`)."""
        s = self.status(k)
        if s is None:
            raise RuntimeError(f"{self.nodes[k].id} did not answer status")
        return s.get("counterSlot", s["incarnation"]).lower()

    def pause(self, k):
        self.nodes[k].process.send_signal(signal.SIGSTOP)
        self.nodes[k].paused = True

    def resume(self, k):
        self.nodes[k].process.send_signal(signal.SIGCONT)
        self.nodes[k].paused = False

    def log_tail(self, k, lines=30):
        try:
            with open(os.path.join(self.root, f"node{k}.log")) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    # ---- network faults (iptables inside the namespace) -------------------------------------
    #
    # Loopback packets traverse OUTPUT and then INPUT of the same namespace, so a rule in OUTPUT
    # alone catches each packet exactly once. That matters for random loss: the same
    # --probability rule in both chains would drop 1 - 0.7 * 0.7 = 51 % instead of 30 %.

    def _rule(self, spec):
        self.ns(["iptables", "-A", "OUTPUT"] + spec)
        self.rules.append(spec)

    def cut_one_way(self, a, b):
        """Packets from node a to node b are dropped (TCP to/from a's listeners included)."""
        self._rule(["-s", self.nodes[a].address, "-d", self.nodes[b].address, "-j", "DROP"])

    def cut(self, a, b):
        self.cut_one_way(a, b)
        self.cut_one_way(b, a)

    def partition(self, *groups):
        """partition({1, 2}, {3}): every link between two groups is cut both ways."""
        for i, group in enumerate(groups):
            for other in groups[i + 1:]:
                for a in group:
                    for b in other:
                        self.cut(a, b)

    def lossy(self, probability):
        """Drops `probability` of the packets on every link between two nodes."""
        for a in self.nodes:
            for b in self.nodes:
                if a != b:
                    self._rule(["-s", self.nodes[a].address, "-d", self.nodes[b].address,
                                "-m", "statistic", "--mode", "random",
                                "--probability", str(probability), "-j", "DROP"])

    def dropped_packets(self):
        """Packets dropped so far by our rules (iptables counters)."""
        out = self.ns(["iptables", "-L", "OUTPUT", "-v", "-n", "-x"]).stdout.splitlines()
        return sum(int(line.split()[0]) for line in out[2:] if line.strip() and "DROP" in line)

    def heal(self):
        self.ns(["iptables", "-F", "OUTPUT"])
        self.ns(["iptables", "-F", "INPUT"])
        self.rules = []

    # ---- client commands --------------------------------------------------------------------

    def binary_of(self, k):
        """The binary node k runs (and its clients use): its own, or the cluster's."""
        return self.nodes[k].binary or self.binary

    def client(self, k, args, timeout=5):
        return subprocess.run([self.binary_of(k)] + args + ["--data", self.nodes[k].data],
                              capture_output=True, text=True, timeout=timeout)

    def status(self, k, timeout=3):
        try:
            result = self.client(k, ["status", "--json"], timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if result.returncode != 0:
            return None
        try:
            return json.loads(result.stdout)
        except ValueError:
            return None

    def statuses(self, ks=None, timeout=3):
        """status --json of several nodes at once (parallel processes); None for no answer."""
        ks = list(self.nodes) if ks is None else list(ks)
        procs = {}
        for k in ks:
            procs[k] = subprocess.Popen([self.binary_of(k), "status", "--json", "--data", self.nodes[k].data],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        out = {}
        for k, p in procs.items():
            try:
                stdout, _ = p.communicate(timeout=timeout)
                out[k] = json.loads(stdout) if p.returncode == 0 else None
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                out[k] = None
            except ValueError:
                out[k] = None
        return out

    def leave(self, k, timeout=40):
        """`replica-node leave` on node k; returns the CompletedProcess (the node exits)."""
        return self.client(k, ["leave"], timeout=timeout)

    def forget(self, k, node_id, timeout=5):
        return self.client(k, ["forget", node_id], timeout=timeout)

    def get(self, k, key):
        """(hlc, node, value) of key on node k, or None when the key is unknown there."""
        result = self.client(k, ["get", key, "--json"], timeout=10)
        if result.returncode != 0:
            if "unknown" in (result.stderr + result.stdout).lower() or "not found" in (result.stderr + result.stdout).lower():
                return None
            raise RuntimeError(f"get {key} on node{k} failed: {result.stderr.strip()}")
        entry = json.loads(result.stdout)
        return entry

    def import_keys(self, k, items, timeout=120):
        """Imports [(key, value)] through `replica-node import -`; returns the count written."""
        text = "".join(json.dumps({"key": key, "value": value}) + "\n" for key, value in items)
        result = subprocess.run([self.binary_of(k), "import", "-", "--data", self.nodes[k].data],
                                input=text, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0 or not result.stdout.startswith("OK "):
            raise RuntimeError(f"import on node{k} failed: {result.stderr.strip()} {result.stdout.strip()}")
        return int(result.stdout.split()[1])

    def stored_entries(self, k, prefix):
        """All entries under `prefix` straight from node k's SQLite file (read-only).

        Used to verify bulk imports without 10,000 client round trips; the tracked keys of the
        workload are verified through the public `get --json` instead.
        """
        path = None
        for name in os.listdir(self.nodes[k].data):
            if name.endswith((".sqlite", ".db", ".sqlite3")):
                path = os.path.join(self.nodes[k].data, name)
        if path is None:
            raise RuntimeError(f"no database file in {self.nodes[k].data}: {os.listdir(self.nodes[k].data)}")
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
        try:
            rows = db.execute("SELECT key, hlc, node, payload FROM entries WHERE key >= ? AND key < ?",
                              (prefix, prefix + "\uffff")).fetchall()
        finally:
            db.close()
        out = {}
        for key, hlc, node, payload in rows:
            if hlc < 0:  # SQLite INTEGER is signed; the HLC is an unsigned 64-bit value
                hlc += 1 << 64
            value = None if payload is None else json.loads(bytes(payload).decode())
            out[key] = (hlc, node, value)
        return out

    # ---- convergence ------------------------------------------------------------------------

    def wait_converged(self, since, timeout=30, ks=None):
        """Polls status until every node reports the same digest; returns (seconds since
        `since` of the first poll round that saw them equal, or None on timeout; the last
        statuses; seconds until every node first saw every other one alive, or None).
        No blind sleeps: one poll round is a parallel `status --json` of every node."""
        ks = list(self.nodes) if ks is None else list(ks)
        ids = {self.nodes[k].id for k in ks}
        deadline = time.monotonic() + timeout
        last, all_alive = None, None
        while time.monotonic() < deadline:
            round_started = time.monotonic()
            statuses = self.statuses(ks)
            last = statuses
            if all_alive is None and all(
                    s is not None and ids - {s["id"]} <= {p.get("id") for p in s["peers"] if p["state"] == "alive"}
                    for s in statuses.values()):
                all_alive = max(0.0, round_started - since)
            digests = {s["digest"] if s else None for s in statuses.values()}
            if len(digests) == 1 and None not in digests:
                # Equal digests mean equal state; the round started no later than this.
                return max(0.0, round_started - since), statuses, all_alive
            # Each round costs 3 client processes; polling harder would steal CPU from the nodes
            # (2 cores) and slow down the very convergence it measures.
            time.sleep(0.1)
        return None, last, all_alive


class Op:
    __slots__ = ("writer", "key", "value", "node", "ok", "hlc", "vnode", "error", "start", "end")

    def __init__(self, writer, key, value, node):
        self.writer, self.key, self.value, self.node = writer, key, value, node
        self.ok = False
        self.hlc = self.vnode = self.error = None
        self.start = self.end = None

    @property
    def version(self):
        return version_key(self.hlc, self.vnode)


class Workload:
    """Client threads writing distinct values {"writer": W, "seq": S} to a few keys on chosen
    nodes. A write is acknowledged when `set --json` exits 0 and prints its version; anything
    else (error, timeout, killed node) is indeterminate: it may or may not have been applied."""

    def __init__(self, cluster, keys, writers=3, targets=None, timeout=3.0, pace=0.02):
        self.cluster = cluster
        self.keys = list(keys)
        self.writers = writers
        self.targets = targets or (lambda w: list(cluster.nodes))
        self.timeout = timeout
        self.pace = pace
        self.ops = []
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.threads = []

    def start(self):
        for w in range(self.writers):
            t = threading.Thread(target=self._loop, args=(w,), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        self.threads = []

    def _loop(self, w):
        rng = random.Random(w * 7919 + os.getpid())
        seq = 0
        while not self.stop_event.is_set():
            targets = self.targets(w)
            if not targets:
                time.sleep(0.05)
                continue
            seq += 1
            op = Op(f"w{w}", rng.choice(self.keys), {"writer": f"w{w}", "seq": seq}, rng.choice(targets))
            self.write(op)
            time.sleep(rng.uniform(0, self.pace))

    def write(self, op):
        op.start = time.monotonic()
        try:
            result = self.cluster.client(op.node, ["set", op.key, json.dumps(op.value, separators=(",", ":")), "--json"],
                                         timeout=self.timeout)
            if result.returncode == 0:
                reply = json.loads(result.stdout)
                op.hlc, op.vnode, op.ok = int(reply["hlc"]), reply["node"], True
            else:
                op.error = (result.stderr.strip() or f"exit {result.returncode}")[:200]
        except subprocess.TimeoutExpired:
            op.error = "timeout"
        except (ValueError, KeyError) as error:
            op.error = f"bad reply: {error}"
        op.end = time.monotonic()
        with self.lock:
            self.ops.append(op)
        return op

    def summary(self):
        ok = sum(1 for op in self.ops if op.ok)
        return f"{len(self.ops)} writes: {ok} acknowledged, {len(self.ops) - ok} indeterminate"


def check_register(cluster, ops, keys, ks=None):
    """Jepsen-style check of LWW registers on every node. Returns a list of problems.

    For each key and node: the stored version is >= the highest acknowledged version (no
    acknowledged write is lost); a stored version equal to an acknowledged write's version
    carries that write's value; a stored value was written by someone (acknowledged or
    indeterminate: an indeterminate write may legitimately win); and all nodes agree.
    """
    ks = list(cluster.nodes) if ks is None else list(ks)
    problems = []
    by_key = {key: [op for op in ops if op.key == key] for key in keys}
    for key in keys:
        acked = [op for op in by_key[key] if op.ok]
        by_version = {op.version: op for op in acked}
        written_values = [op.value for op in by_key[key]]
        best = max((op.version for op in acked), default=None)
        seen = {}
        for k in ks:
            entry = cluster.get(k, key)
            if entry is None:
                if acked:
                    problems.append(f"{key} missing on node{k}; highest acknowledged {best}")
                seen[k] = None
                continue
            version = version_key(entry["hlc"], entry["node"])
            # `get --json` embeds a JSON value as JSON ("encoding": "json"); other bytes would be
            # base64, which this workload never writes.
            value = entry.get("value") if entry.get("encoding") == "json" else None
            seen[k] = version
            if best is not None and version < best:
                lost = by_version[best]
                problems.append(f"LOST acknowledged write on node{k}: {key} has {version} {value}, "
                                f"but {lost.value} was acknowledged at {best} by node{lost.node}")
            if version in by_version and by_version[version].value != value:
                problems.append(f"{key} on node{k}: version {version} holds {value}, acknowledged value was {by_version[version].value}")
            if value not in written_values:
                problems.append(f"{key} on node{k}: value {value} at {version} was never written")
        if len(set(seen.values())) > 1:
            problems.append(f"{key}: nodes disagree: {seen}")
    return problems


def check_bulk(cluster, prefix, expected, ks=None):
    """Every node holds exactly `expected` ({key: value}) under `prefix`."""
    ks = list(cluster.nodes) if ks is None else list(ks)
    problems = []
    for k in ks:
        stored = cluster.stored_entries(k, prefix)
        missing = [key for key in expected if key not in stored]
        wrong = [key for key in expected if key in stored and stored[key][2] != expected[key]]
        extra = [key for key in stored if key not in expected]
        if missing or wrong or extra:
            problems.append(f"node{k} under {prefix!r}: {len(missing)} missing (e.g. {missing[:3]}), "
                            f"{len(wrong)} wrong, {len(extra)} unexpected")
    return problems


# ---- counters and drink logs ------------------------------------------------------------------
#
# Client commands `incr`, `drinks add` and `drinks remove`, each recorded as acknowledged (exit 0
# with a parsable reply), rejected (`drinks remove` of an id the node does not know: exit 1 with
# "unknown drink", nothing written) or indeterminate (any other error or a timeout: it may or may
# not have been applied).

class CallOp:
    __slots__ = ("kind", "node", "incarnation", "by", "name", "mg", "date", "drink_id", "ref",
                 "ok", "rejected", "reply", "error", "start", "end")

    def __init__(self, kind, node, **fields):
        self.kind, self.node = kind, node
        self.incarnation = self.by = self.name = self.mg = self.date = self.drink_id = self.ref = None
        for key, value in fields.items():
            setattr(self, key, value)
        self.ok = self.rejected = False
        self.reply = self.error = self.start = self.end = None

    @property
    def indeterminate(self):
        return not self.ok and not self.rejected

    def __repr__(self):
        what = {"incr": f"incr {self.by:+d}", "add": f"add {self.name!r}",
                "remove": f"remove {self.drink_id}"}[self.kind]
        state = "ok" if self.ok else "rejected" if self.rejected else f"indeterminate ({self.error})"
        return f"<{what} on node{self.node}: {state}>"


def incr_op(node, by, incarnation=None):
    return CallOp("incr", node, by=by, incarnation=incarnation)


def add_op(node, name, mg, date):
    return CallOp("add", node, name=name, mg=mg, date=date)


def remove_op(node, drink_id=None, ref=None):
    """Removes `drink_id`, or the drink added by the earlier add op `ref` (skipped if that add
    was not acknowledged: its id is unknown)."""
    return CallOp("remove", node, drink_id=drink_id, ref=ref)


def perform(cluster, op, timeout=5.0):
    """Runs one CallOp against its node and records the outcome in it. Returns op, or None for
    a removal skipped because the add it refers to was not acknowledged."""
    if op.kind == "incr":
        args = ["incr", "visits" if op.name is None else op.name, "--by", str(op.by), "--json"]
    elif op.kind == "add":
        args = ["drinks", "add", "--name", op.name, "--mg", str(op.mg), "--date", op.date, "--json"]
    else:
        if op.drink_id is None:
            if op.ref is None or not op.ref.ok:
                return None
            op.drink_id = op.ref.drink_id
        args = ["drinks", "remove", op.drink_id, "--json"]
    op.start = time.monotonic()
    try:
        result = cluster.client(op.node, args, timeout=timeout)
        if result.returncode == 0:
            if op.kind == "incr":
                op.reply = json.loads(result.stdout)
                int(op.reply["value"])
            elif op.kind == "add":
                op.reply = json.loads(result.stdout)
                op.drink_id = op.reply["id"]
            op.ok = True
        elif op.kind == "remove" and result.returncode == 1 and "unknown drink" in result.stderr:
            op.rejected = True
            op.error = result.stderr.strip()[:200]
        else:
            op.error = (result.stderr.strip() or f"exit {result.returncode}")[:200]
    except subprocess.TimeoutExpired:
        op.error = "timeout"
    except (ValueError, KeyError, TypeError) as error:
        op.error = f"bad reply: {error}"
    op.end = time.monotonic()
    return op


def run_scripts(cluster, scripts, timeout=5.0):
    """Runs several lists of CallOps in parallel, one thread per list, each list in order.
    Returns every op that was performed (skipped removals left out)."""
    done = [[] for _ in scripts]
    errors = []

    def loop(i, script):
        try:
            for op in script:
                if perform(cluster, op, timeout=timeout) is not None:
                    done[i].append(op)
        except BaseException as error:  # surfaced below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=loop, args=(i, script), daemon=True) for i, script in enumerate(scripts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [op for ops in done for op in ops]


def subset_sums(values):
    """Every sum of a subset of `values` (indeterminate increments may or may not count)."""
    sums = {0}
    for v in values:
        sums |= {s + v for s in sums}
    return sums


def counter_expectation(ops):
    """(acknowledged sum, possible extra sums from indeterminate increments)."""
    acked = sum(op.by for op in ops if op.kind == "incr" and op.ok)
    return acked, subset_sums([op.by for op in ops if op.kind == "incr" and op.indeterminate])


def check_counter(cluster, name, ops, ks=None):
    """Every node's `counter NAME --json`: the value is the sum of the acknowledged increments
    plus a subset of the indeterminate ones; each slot likewise holds exactly the increments made
    through it (ops carry the counter slot of the node they went to); no other
    slot; no problems; every node reports the same slots. Returns (problems, values)."""
    ks = list(cluster.nodes) if ks is None else list(ks)
    incrs = [op for op in ops if op.kind == "incr"]
    acked, extra = counter_expectation(incrs)
    by_slot = {}
    for op in incrs:
        by_slot.setdefault(op.incarnation, []).append(op)
    problems, values, slot_views = [], {}, {}
    for k in ks:
        result = cluster.client(k, ["counter", name, "--json"], timeout=10)
        if result.returncode != 0:
            problems.append(f"counter {name} on node{k} failed: {result.stderr.strip()}")
            continue
        reply = json.loads(result.stdout)
        value = reply["value"]
        values[k] = value
        if value - acked not in extra:
            indeterminate = [op.by for op in incrs if op.indeterminate]
            problems.append(f"counter {name} on node{k} is {value}; acknowledged increments sum to {acked}"
                            + (f" (+ any subset of the indeterminate {indeterminate})" if indeterminate else "")
                            + f"; off by {value - acked}")
        if reply.get("problems"):
            problems.append(f"counter {name} on node{k} reports problems: {reply['problems']}")
        slots = {slot["incarnation"].lower(): (slot["node"], slot["total"]) for slot in reply["slots"]}
        slot_views[k] = slots
        if sum(total for _, total in slots.values()) != value:
            problems.append(f"counter {name} on node{k}: slots {slots} do not add up to the value {value}")
        for incarnation, slot_ops in by_slot.items():
            if incarnation is None:
                continue
            slot_acked, slot_extra = counter_expectation(slot_ops)
            node_id = cluster.nodes[slot_ops[0].node].id
            got = slots.get(incarnation)
            total = got[1] if got else 0
            if total - slot_acked not in slot_extra:
                problems.append(f"counter {name} on node{k}: slot {node_id}/{incarnation} holds {total}, "
                                f"acknowledged increments through it sum to {slot_acked}")
            if got and got[0] != node_id:
                problems.append(f"counter {name} on node{k}: slot {incarnation} is attributed to {got[0]}, not {node_id}")
        if None not in by_slot:
            unknown = set(slots) - set(by_slot)
            if unknown:
                problems.append(f"counter {name} on node{k}: slots nobody incremented: "
                                f"{ {i: slots[i] for i in unknown} }")
    if len({json.dumps(v, sort_keys=True) for v in slot_views.values()}) > 1:
        problems.append(f"counter {name}: nodes disagree on the slots: {slot_views}")
    return problems, values


def expected_drinks(ops):
    """(definite {id: drink}, ids that may or may not be there, indeterminate adds).

    Definite: acknowledged adds minus acknowledged removals. An indeterminate removal of an
    acknowledged drink leaves it possible either way; an indeterminate add may show up (with
    the name, mg and date it was given, under an id we never learnt)."""
    drinks = {op.drink_id: {"id": op.drink_id, "name": op.name, "mg": op.mg, "date": op.reply["date"]}
              for op in ops if op.kind == "add" and op.ok}
    maybe = set()
    for op in ops:
        if op.kind == "remove" and op.drink_id in drinks:
            if op.ok:
                drinks.pop(op.drink_id)
                maybe.discard(op.drink_id)
            elif op.indeterminate:
                maybe.add(op.drink_id)
    removed_ok = {op.drink_id for op in ops if op.kind == "remove" and op.ok}
    maybe -= removed_ok
    maybe_drinks = {i: drinks.pop(i) for i in list(maybe) if i in drinks}
    pending_adds = [op for op in ops if op.kind == "add" and op.indeterminate]
    return drinks, maybe_drinks, pending_adds


def check_drinks(cluster, ops, ks=None):
    """Every node's `drinks list --json` is exactly the acknowledged adds minus the acknowledged
    removals (ids, names, mg, dates), ordered by date then id, the same on every node; removed
    drinks stay removed. Returns (problems, lists)."""
    ks = list(cluster.nodes) if ks is None else list(ks)
    definite, maybe, pending_adds = expected_drinks(ops)
    removed = {op.drink_id for op in ops if op.kind == "remove" and op.ok}
    problems, lists = [], {}
    for k in ks:
        result = cluster.client(k, ["drinks", "list", "--json"], timeout=10)
        if result.returncode != 0:
            problems.append(f"drinks list on node{k} failed: {result.stderr.strip()}")
            continue
        listed = json.loads(result.stdout)
        lists[k] = listed
        got = {d["id"]: d for d in listed}
        if len(got) != len(listed):
            problems.append(f"node{k} lists a drink id twice")
        order = [(d["date"], d["id"].lower()) for d in listed]
        if order != sorted(order):
            problems.append(f"node{k}: drinks not ordered by date then id")
        missing = [i for i in definite if i not in got]
        wrong = [(definite[i], got[i]) for i in definite if i in got
                 and {f: got[i][f] for f in ("id", "name", "mg", "date")} != definite[i]]
        resurrected = [got[i] for i in got if i in removed]
        extra = [got[i] for i in got if i not in definite and i not in maybe and i not in removed]
        unexplained = []
        for d in extra:  # an indeterminate add may have landed
            match = next((op for op in pending_adds if (op.name, op.mg) == (d["name"], d["mg"])
                          and d["date"].startswith(op.date.rstrip("Z")[:19])), None)
            if match is None:
                unexplained.append(d)
        if missing:
            problems.append(f"node{k}: {len(missing)} acknowledged drink(s) missing, e.g. {[definite[i] for i in missing[:3]]}")
        if wrong:
            problems.append(f"node{k}: {len(wrong)} drink(s) differ from what was added, e.g. {wrong[:2]}")
        if resurrected:
            problems.append(f"node{k}: {len(resurrected)} removed drink(s) listed again, e.g. {resurrected[:3]}")
        if unexplained:
            problems.append(f"node{k}: {len(unexplained)} drink(s) nobody added, e.g. {unexplained[:3]}")
        if not maybe and not pending_adds:
            expected = sorted(definite.values(), key=lambda d: (d["date"], d["id"].lower()))
            if [{f: d[f] for f in ("id", "name", "mg", "date")} for d in listed] != expected and not problems:
                problems.append(f"node{k}: drinks list differs from the expected list")
    if len({json.dumps(v, sort_keys=True) for v in lists.values()}) > 1:
        problems.append("nodes list different drinks: " + ", ".join(f"node{k}: {len(v)}" for k, v in lists.items()))
    return problems, lists


def op_summary(ops):
    """'incr: 1000 acknowledged, 0 indeterminate; add: ...' per kind."""
    parts = []
    for kind in ("incr", "add", "remove"):
        mine = [op for op in ops if op.kind == kind]
        if mine:
            ok = sum(op.ok for op in mine)
            rejected = sum(op.rejected for op in mine)
            parts.append(f"{kind}: {ok} acknowledged" + (f", {rejected} rejected" if rejected else "")
                         + f", {len(mine) - ok - rejected} indeterminate")
    return "; ".join(parts)
