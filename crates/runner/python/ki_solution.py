"""The solution worker of `ki verify`: one fresh process per solution (or baseline).

Before it imports the code under test it imports torch, ki_timing (which binds the timing entry
points), ki_inputs and ki_exchange, initializes CUDA, warms every path it will use (events, a graph
capture, a profiler session) and snapshots the identity of every callable in the modules and
classes the timing and checking go through. From the import of the solution on, nothing in this
interpreter is taken on trust:

* correctness is decided by the judge, another process, on copies of the outputs in device memory
  it maps (ki_exchange); references never enter this process;
* every trial has new inputs (new seed, new allocations); timed calls rotate over copies, so each
  call sees inputs at its own address;
* outputs are poisoned (NaN, or the integer type's maximum) before every call, also the timed ones
  (outside their spans); the outputs of the first call, of the last eager call and of every call of
  the in-graph timing (after a replay) go to the judge, so an answer that changes with the call
  count fails;
* after every call: the outputs must be exactly torch.Tensor (no subclass, no lazy proxy) on the
  GPU; no Python thread and no child process may outlive the call; no device work may still be
  running on another stream (after our stream's event completes, a device-wide synchronize must
  return at once); the snapshot must still hold (a monkey patch of torch.cuda.Event.elapsed_time or
  of any function the timing or checks use is named); no torch function or dispatch mode, no trace
  or profile hook may be left installed.
Violations end the solution's run with `suspected_reward_hack` and the check's name. The runner (Rust)
also refuses times below the operation's speed-of-light bound.

Protocol: JSON lines. Jobs: hello, load, workload. While a workload runs, the worker asks for
checks with {"check": ...} lines and reads one answer line for each.
"""

import ctypes
import importlib.machinery
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import time
import traceback

PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
PROTOCOL_IN = os.fdopen(os.dup(0), "r", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

# torch._dynamo rebinds torch.manual_seed when first imported: imported here, before the integrity
# snapshot, so a later lazy import does not read as a monkey patch (seen on the H200, 2026-12-01).
import torch._dynamo  # noqa: E402, F401

import ki_exchange  # noqa: E402
import ki_inputs  # noqa: E402
import ki_timing  # noqa: E402
import ki_windows  # noqa: E402

_perf_ns = time.perf_counter_ns
_urandom = os.urandom
_Tensor = torch.Tensor
_synchronize = torch.cuda.synchronize
_mem_get_info = torch.cuda.mem_get_info
_empty_cache = torch.cuda.empty_cache
_Event = torch.cuda.Event
_current_frames = sys._current_frames
_json_dumps = json.dumps
_json_loads = json.loads


class Refused(Exception):
    """A check failed: the run is refused as dishonest."""

    def __init__(self, check, message):
        super().__init__(message)
        self.check = check


class HarnessError(Exception):
    """The harness could not measure or judge the call (the judge failed, a record could not be
    read): never the solution's fault, never a pass."""


class Failed(Exception):
    """The solution failed honestly (runtime error, wrong shape, ...)."""

    def __init__(self, verdict, message, fatal=False):
        super().__init__(message)
        self.verdict = verdict
        self.fatal = fatal


def send(obj):
    PROTOCOL_OUT.write(_json_dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


def receive():
    line = PROTOCOL_IN.readline()
    if not line:
        raise SystemExit(0)
    return _json_loads(line)


# ---------------------------------------------------------------- integrity snapshot
def _watched():
    import torch.autograd.profiler as autograd_profiler
    import torch.autograd.profiler_util as profiler_util
    import torch.cuda.graphs as graphs
    import torch.profiler as profiler

    return {
        "torch": torch,
        "torch.cuda": torch.cuda,
        "torch.cuda.graphs": graphs,
        "torch.profiler": profiler,
        "torch.autograd.profiler": autograd_profiler,
        "torch.autograd.profiler_util": profiler_util,
        "torch.Tensor": torch.Tensor,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph,
        "torch.cuda.Stream": torch.cuda.Stream,
        "torch.profiler.profile": profiler.profile,
        "time": time,
        "threading": threading,
        "json": json,
        "os": os,
        "sys": sys,
        "ctypes": ctypes,
        "ki_timing": ki_timing,
        "ki_inputs": ki_inputs,
        "ki_windows": ki_windows,
        "ki_windows.SeedLedger": ki_windows.SeedLedger,
        "ki_inputs.Slot": ki_inputs.Slot,
        "ki_exchange": ki_exchange,
        "ki_solution": sys.modules[__name__],
    }


def snapshot():
    ids = {}
    for label, obj in _watched().items():
        space = vars(obj) if isinstance(obj, type) else getattr(obj, "__dict__", {})
        for name, value in list(space.items()):
            if callable(value) or isinstance(value, (type, staticmethod, classmethod, property)):
                ids[f"{label}.{name}"] = id(value)
    for path, value in ki_timing.bound_functions():
        ids[f"bound:{path}"] = id(value)
    return ids


def _public(path):
    obj = None
    parts = path.split(".")
    obj = sys.modules[parts[0]]
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj


def integrity(before):
    problems = []
    now = snapshot()
    for key, value in before.items():
        if key.startswith("bound:"):
            try:
                if id(_public(key[6:])) != value:
                    problems.append(key[6:])
            except AttributeError:
                problems.append(key[6:])
        elif now.get(key) != value:
            problems.append(key)
    if problems:
        raise Refused("monkey_patch", f"replaced after the solution was imported: {', '.join(sorted(problems)[:8])}")
    if sys.gettrace() is not None or sys.getprofile() is not None:
        raise Refused("monkey_patch", "a trace or profile hook is installed")
    if torch._C._len_torch_function_stack() != 0 or torch._C._len_torch_dispatch_stack() != 0:
        raise Refused("monkey_patch", "a torch function or dispatch mode is left installed")


# ---------------------------------------------------------------- process state checks
def _children():
    total = 0
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children") as f:
                total += len(f.read().split())
    except OSError:
        pass
    return total


class State:
    def __init__(self):
        self.threads = set(_current_frames())
        self.children = _children()

    def after(self, what="the call"):
        alive = [t for t in set(_current_frames()) - self.threads if t in _current_frames()]
        if alive:
            names = [t.name for t in threading.enumerate() if t.ident in alive] or [str(a) for a in alive]
            raise Refused("thread_injection", f"{len(alive)} Python thread(s) started by {what} still run after it returned: {', '.join(names[:3])}")
        if _children() > self.children:
            raise Refused("process_injection", f"a child process started by {what} still runs after it returned")


def pending_device_work_ns():
    """After our stream's work is done, how long a device-wide synchronize still takes."""
    event = _Event()
    event.record()
    event.synchronize()
    start = _perf_ns()
    _synchronize()
    return _perf_ns() - start


def _cudart():
    for line in open("/proc/self/maps"):
        if "libcudart.so" in line:
            return ctypes.CDLL(line.split()[-1])
    return None


CUDART = None


def clear_cuda_error():
    global CUDART
    if CUDART is None:
        CUDART = _cudart() or False
    if CUDART:
        CUDART.cudaGetLastError()


def context_alive():
    try:
        _synchronize()
        torch.empty(1, device="cuda").fill_(1)
        _synchronize()
        return True
    except Exception:
        return False


# ---------------------------------------------------------------- loading
def _pybind_arity(fn):
    """(required, total) positional parameters of a pybind11 function, from its signature line."""
    doc = getattr(fn, "__doc__", None) or ""
    for line in doc.splitlines():
        m = re.match(r"\s*(?:\d+\.\s*)?\w+\((.*)\)\s*->", line)
        if not m:
            continue
        args, depth, current = [], 0, ""
        for ch in m.group(1):
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>":
                depth -= 1
            if ch == "," and depth == 0:
                args.append(current.strip())
                current = ""
            else:
                current += ch
        if current.strip():
            args.append(current.strip())
        if any(a.startswith("*") for a in args):
            return 0, None
        return sum(1 for a in args if "=" not in a), len(args)
    return None


def _python_arity(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    required, total = 0, 0
    for p in sig.parameters.values():
        if p.kind == p.VAR_POSITIONAL:
            return required, None
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            total += 1
            if p.default is p.empty:
                required += 1
    return required, total


def decide_dps(declared, fn, n_inputs, n_outputs, is_extension):
    if declared is not None:
        return bool(declared), "declared by the solution"
    arity = _pybind_arity(fn) if is_extension else _python_arity(fn)
    if arity is None:
        return True, "destination_passing_style absent: the schema's default (true)"
    required, total = arity
    if total is None or total >= n_inputs + n_outputs:
        return True, "destination_passing_style absent: the schema's default (true)"
    if required <= n_inputs <= total:
        return (
            False,
            f"destination_passing_style absent and the entry point takes {total} positional parameters, the {n_inputs} inputs only: called value-returning",
        )
    return True, "destination_passing_style absent: the schema's default (true)"


SOLUTION = {}


def load(job):
    definition = job["definition"]
    n_in, n_out = len(definition["inputs"]), len(definition["outputs"])
    kind = job["kind"]
    if kind == "baseline":
        import ki_baselines

        label, description, make = ki_baselines.builder_for(definition)
        SOLUTION.update(kind="baseline", make=make, dps=False, label=label)
        return {"label": label, "description": description, "dps": False, "dps_reason": "baseline"}
    if kind == "python":
        sys.path.insert(0, job["dir"])
        path = os.path.join(job["dir"], job["entry_file"])
        spec = importlib.util.spec_from_file_location("ki_solution_module", path)
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            raise Failed("runtime_error", f"importing {job['entry_file']}: {type(error).__name__}: {error}") from error
    else:
        loader = importlib.machinery.ExtensionFileLoader(job["module_name"], job["so_path"])
        spec = importlib.util.spec_from_file_location(job["module_name"], job["so_path"], loader=loader)
        module = importlib.util.module_from_spec(spec)
        try:
            loader.exec_module(module)
        except Exception as error:
            raise Failed("runtime_error", f"loading the built extension: {type(error).__name__}: {error}") from error
    fn = getattr(module, job["function"], None)
    if fn is None or not callable(fn):
        raise Failed("runtime_error", f"missing entry point: {job['entry_file']} defines no callable `{job['function']}`")
    dps, reason = decide_dps(job.get("dps"), fn, n_in, n_out, kind != "python")
    SOLUTION.update(kind=kind, fn=fn, dps=dps)
    return {"dps": dps, "dps_reason": reason}


# ---------------------------------------------------------------- calls
def poison_(t):
    if t.dtype.is_floating_point:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


_M63 = (1 << 63) - 1


def fresh_seed():
    """A call seed nobody can predict: drawn from the OS when the call's turn comes."""
    return int.from_bytes(_urandom(8), "little") & _M63


def pick(population, count):
    """`count` distinct members of a sequence, chosen with OS randomness."""
    pool = list(population)
    chosen = []
    while pool and len(chosen) < count:
        chosen.append(pool.pop(int.from_bytes(_urandom(4), "little") % len(pool)))
    return chosen


class Caller:
    """call(i): one call of the solution on input slot i % K (outputs of that slot for DPS).

    Each slot is a `ki_inputs.Slot`: its tensors stay where they are (a captured graph reads them
    there) while their values are rewritten from a new call seed before every call (`prepare`)."""

    def __init__(self, plan, slots, ledger):
        self.names = [t["name"] for t in plan["tensors"]]
        self.outs = plan["outputs"]
        self.slots = slots
        self.k = len(slots)
        self.dps = SOLUTION["dps"]
        self.ledger = ledger
        self.last = [None] * self.k
        self.dest = None
        self.unwritten = torch.zeros((), dtype=torch.int64, device="cuda")
        if SOLUTION["kind"] == "baseline":
            self.runners = [SOLUTION["make"](slot.values) for slot in slots]
        else:
            self.args = [[slot.values[n] for n in self.names] for slot in slots]
            if self.dps:
                self.dest = [[torch.empty(o["shape"], dtype=ki_inputs.DTYPES[o["dtype"]], device="cuda") for o in self.outs] for _ in slots]

    def __call__(self, i):
        k = i % self.k
        if SOLUTION["kind"] == "baseline":
            self.last[k] = self.runners[k]()
            return
        if self.dps:
            SOLUTION["fn"](*self.args[k], *self.dest[k])
            self.last[k] = self.dest[k]
        else:
            self.last[k] = SOLUTION["fn"](*self.args[k])

    def keep(self, count):
        """Only the first `count` slots stay: a slow call's trial makes fewer calls than the slots
        were sized for, and what the rest held goes back to the driver, for the judge, which
        recomputes references on the same GPU (moe at seq_len 14,107: the worker held 68.6 GiB of
        an H100 and the judge's reference ran out of memory, 2026-12-07)."""
        if count >= self.k:
            return
        del self.slots[count:]
        self.last = self.last[:count]
        if SOLUTION["kind"] == "baseline":
            del self.runners[count:]
        else:
            del self.args[count:]
            if self.dest is not None:
                del self.dest[count:]
        self.k = count
        _empty_cache()

    def reseed(self, i, timed=True, seed=None):
        """Call i's slot gets a new call seed (written to its device seed tensor, not yet used)."""
        seed = fresh_seed() if seed is None else seed
        self.ledger.use(seed, timed)
        self.slots[i % self.k].set_seed(seed)

    def prepare(self, i, timed=True, seed=None):
        """Before call i: new values in its inputs, its outputs poisoned."""
        self.reseed(i, timed, seed)
        self.slots[i % self.k].refill()
        self.poison(i)

    def poison(self, i):
        """Before call i: its destinations, and whatever its slot returned last time."""
        k = i % self.k
        if self.dest is not None:
            for t in self.dest[k]:
                poison_(t)
        if self.last[k] is not None and not self.dps:
            for t in self.outputs(k, check=False):
                poison_(t)

    def count_unwritten(self, i):
        """After call i (outside every timed span): floating outputs still holding the poison."""
        k = i % self.k
        result = self.last[k] if not self.dps else self.dest[k]
        if result is None:
            return
        for t in self.outputs(k, check=False):
            if t.dtype.is_floating_point and t.is_cuda:
                self.unwritten.add_(torch.isnan(t).sum())

    def outputs(self, k, check=True):
        """The outputs of slot k's last call, in definition order, checked for type, device, dtype, shape."""
        result = self.last[k]
        names = [o["name"] for o in self.outs]
        if isinstance(result, dict):
            missing = [n for n in names if n not in result]
            if missing:
                raise Failed("runtime_error", f"the returned dict has no output {missing[0]!r}")
            values = [result[n] for n in names]
        elif isinstance(result, (tuple, list)):
            if len(result) != len(names):
                raise Failed("incorrect_shape", f"returned {len(result)} value(s), the definition has {len(names)} output(s)")
            values = list(result)
        else:
            values = [result]
            if len(names) != 1:
                raise Failed("incorrect_shape", f"returned one value, the definition has {len(names)} outputs")
        if not check:
            return [v for v in values if isinstance(v, _Tensor)]
        for name, spec, value in zip(names, self.outs, values):
            if type(value) is not _Tensor:
                lazy = isinstance(value, _Tensor) or hasattr(type(value), "__torch_function__") or hasattr(type(value), "__torch_dispatch__")
                if lazy:
                    raise Refused("lazy_output", f"output {name} is {type(value).__module__}.{type(value).__name__}, not exactly torch.Tensor")
                raise Failed("runtime_error", f"output {name} is {type(value).__name__}, not a tensor")
            if value.device.type != "cuda":
                raise Failed("runtime_error", f"output {name} is on {value.device}, not the GPU")
            if ki_inputs.DTYPES[spec["dtype"]] != value.dtype:
                raise Failed("incorrect_dtype", f"output {name} is {value.dtype}, the definition says {spec['dtype']}")
            if list(value.shape) != [int(d) for d in spec["shape"]]:
                raise Failed("incorrect_shape", f"output {name} has shape {list(value.shape)}, the definition says {spec['shape']}")
        return values

    def assert_written(self, phase):
        """Every floating output of every call since the last look was written (no poison left)."""
        _synchronize()
        left = int(self.unwritten.item())
        self.unwritten.zero_()
        if left:
            raise Failed(
                "incorrect_numerical",
                f"{left} output element(s) still held the poison after calls of the {phase} timing (outputs left unwritten on some calls)",
            )


class Exchange:
    def __init__(self):
        self.buffer = None
        self.retired = []
        self.serial = 0

    def ensure(self, nbytes):
        """Returns the exchange's announcement when a (larger) buffer had to be made. The old one
        stays allocated (the judge may still map it; see ki_exchange); sizes at least double, so
        what is kept is less than the live buffer."""
        if self.buffer is not None and self.buffer.nbytes >= nbytes:
            return None
        size = max(nbytes, 1 << 20)
        if self.buffer is not None:
            size = max(size, 2 * self.buffer.nbytes)
            self.retired.append(self.buffer)
        try:
            self.buffer = ki_exchange.Exported(size)
        except ki_exchange.OutOfMemory:
            # cuMemAlloc does not draw on torch's cache: what torch holds unused is given back to
            # the driver first (moe at seq_len 14,107 failed here on an H200, 2026-12-07).
            torch.cuda.empty_cache()
            self.buffer = ki_exchange.Exported(size)
        self.serial += 1
        return {"serial": self.serial, "handle": self.buffer.handle_hex, "bytes": self.buffer.nbytes}


EXCHANGE = Exchange()


def check(caller, slots, plan, label, probe=False):
    """Copies the outputs of the given slots into the exchange and asks the judge to compare each
    with the reference of the inputs that slot last held (its call seed); raises on failure. A
    probe's failure is for the caller to interpret: its figures stay out of the published worst case."""
    values = [(k, caller.outputs(k)) for k in slots]
    total = 0
    for _, outs in values:
        for t in outs:
            total += (t.numel() * t.element_size() + 255) // 256 * 256
    announce = EXCHANGE.ensure(total)
    calls, offset = [], 0
    for k, outs in values:
        specs = []
        for spec, t in zip(caller.outs, outs):
            n = t.numel() * t.element_size()
            region = EXCHANGE.buffer.tensor[offset : offset + n]
            region.view(t.dtype).view(t.shape).copy_(t)
            specs.append(
                {
                    "name": spec["name"],
                    "offset": offset,
                    "nbytes": n,
                    "shape": list(t.shape),
                    "dtype": spec["dtype"],
                    "digest": ki_exchange.digest(region),
                }
            )
            offset += (n + 255) // 256 * 256
        seed = caller.slots[k].seed
        caller.ledger.check(seed)
        calls.append({"label": f"{label}:{k}", "seed": seed, "outputs": specs})
    _synchronize()
    # The judge computes the references of timed calls' seeds on this GPU now: what torch holds
    # here unused goes back to the driver first.
    _empty_cache()
    send(
        {
            "check": {
                "workload": plan["workload"],
                "trial": plan["trial"],
                "exchange": announce,
                "serial": EXCHANGE.serial,
                "calls": calls,
                "probe": probe,
            }
        }
    )
    answer = receive()
    if answer.get("harness_error"):
        raise HarnessError(answer.get("reason", "the judge failed"))
    if not answer.get("pass"):
        raise Failed(answer.get("verdict", "incorrect_numerical"), answer.get("reason", "outputs differ from the reference"))


def check_timed(caller, slots, plan, label):
    """`check` of outputs of timed calls. A failure is diagnosed before it is reported: were the
    slot's inputs still what its seed says, and does a synchronized re-run on them pass? (A pass
    there names a failure that depends on timing: a kernel racing with the work queued before it.)"""
    try:
        check(caller, slots, plan, label)
    except Failed as error:
        raise Failed(error.verdict, f"{error} [{diagnose(caller, slots, plan)}]", fatal=error.fatal) from error


def diagnose(caller, slots, plan):
    notes = []
    for k in slots:
        try:
            _synchronize()
            slot = caller.slots[k]
            fresh = ki_inputs.Slot(plan)
            fresh.fill(slot.seed)
            changed = [n for n, t in slot.values.items() if isinstance(t, _Tensor) and not torch.equal(t, fresh.values[n])]
            del fresh
            caller(k)
            _synchronize()
            try:
                check(caller, [k], plan, f"re-run:{k}")
                outcome = "passed"
            except Failed:
                outcome = "failed again"
            held = f"input(s) {', '.join(changed)} no longer held their seed's values" if changed else "the inputs held their seed's values"
            notes.append(f"slot {k}: {held}; a synchronized re-run on them {outcome}")
        except Exception as error:  # the diagnosis never hides the failure it explains
            notes.append(f"slot {k}: not diagnosed ({type(error).__name__}: {error})"[:300])
    return "; ".join(notes)


def guarded(caller, i, snap, watch_pending):
    state = State()
    caller(i)
    pending = pending_device_work_ns() if watch_pending else 0
    _synchronize()
    if watch_pending and pending > 500_000:
        raise Refused("side_stream", f"device work was still running {pending / 1e6:.2f} ms after the call returned (work left on another stream)")
    state.after()
    integrity(snap)


def counts(t_call_s, protocol):
    per = max(t_call_s, 20e-6) + 40e-6
    budget = protocol.get("trial_budget_s", 0.25) / per
    scale = min(1.0, budget / 120.0)
    eager = max(3, round(protocol.get("eager_iterations", 10) * scale))
    n = max(2, min(protocol.get("calls_per_graph", 8), round(protocol.get("calls_per_graph", 8) * scale)))
    replays = max(4, round(protocol.get("graph_replays", 10) * scale))
    return eager, n, replays


def gate_ns(t_call_s):
    """How long the CUPTI timing holds the caller's stream before each call: well past the time the
    host took to enqueue (and return from) one call, so the closing marker is enqueued before the
    call's work may start. A call that synchronizes inside waits for the gate to end: at most 10 ms."""
    return min(10_000_000, max(100_000, 3 * t_call_s * 1e9))


def run_trial(plan, protocol, flush, snap, ledger):
    slot_bytes = ki_inputs.plan_nbytes(plan)
    # Input slots take at most 40 GB and a quarter of the memory free now: the graphs' pools, the
    # outputs and the judge's references need the rest (moe seq_len 11948 held 57 GB in one worker
    # and ran out of memory on an 80 GB H100, 2026-12-06).
    free, _total = _mem_get_info()
    k = max(2, min(protocol.get("calls_per_graph", 8), int(min(40e9, free / 4) // max(slot_bytes, 1))))
    files = {}
    slots = [ki_inputs.Slot(plan, files=files) for _ in range(k)]
    del files
    _synchronize()
    caller = Caller(plan, slots, ledger)
    record = {"trial": plan["trial"], "checks": 0}

    # 1. The call whose outputs decide correctness on the plan's own seed (the judge computed its
    #    reference ahead): fresh values, poisoned outputs. Not timed.
    caller.prepare(0, timed=False, seed=plan["seed"])
    start = _perf_ns()
    guarded(caller, 0, snap, watch_pending=True)
    record["first_call_ns"] = _perf_ns() - start
    check(caller, [0], plan, "first")
    record["checks"] += 1
    # 2. A second call, timed on the host, sizes the protocol's counts.
    caller.prepare(1, timed=False)
    start = _perf_ns()
    guarded(caller, 1, snap, watch_pending=True)
    t_call = (_perf_ns() - start) / 1e9
    eager_n, n, replays = counts(t_call, protocol)
    n = min(n, k)
    caller.keep(max(2, n))
    record.update(host_call_ns=t_call * 1e9, eager_iterations=eager_n, calls_per_graph=n, graph_replays=replays)

    # 3. latency_eager: every call on new values and poisoned outputs; the last call and one other
    #    whose slot has not been reused since are checked.
    state = {"next": 2}

    def counted(i):
        caller(i)
        state["next"] = i + 1

    threads = State()
    record["sync_probe_ns"] = []
    record["eager_ns"] = ki_timing.eager_samples(
        counted, flush, 1, eager_n, first_index=2, prepare=caller.prepare, after=caller.count_unwritten, sync_probes=record["sync_probe_ns"]
    )
    threads.after()
    integrity(snap)
    caller.assert_written("eager")
    last = state["next"] - 1
    recent = [i for i in range(max(2, last - caller.k + 1), last)]
    check_timed(caller, sorted({last % caller.k, *[i % caller.k for i in pick(recent, 1)]}), plan, "eager")
    record["checks"] += 1

    # 4. latency_in_graph (capturable callables): every replay writes new values into every call's
    #    inputs inside the graph (from seeds set just before it); outputs are poisoned before each
    #    replay and scanned for poison after it; a replay checked before the timed ones decides
    #    whether the callable's work was captured at all, then two random replays and the last are
    #    checked, one random call of each.
    graph = None
    if not protocol.get("graph", True):
        # A worker of this solution ended while capturing (the runner saw it between the two
        # stage lines): its calls are timed by CUPTI only.
        record["graph_error"] = "a worker of this solution ended while capturing a graph: not capturable, timed by CUPTI"
    else:
        # The runner is told when capture starts and ends, so that a process that dies in between
        # (a solution that exits when a call it makes fails under capture) is not blamed for it.
        send({"stage": "capture"})
        try:
            for i in range(n):
                caller.prepare(i)
            graph = ki_timing.InGraph(
                caller, flush, n, refill=lambda i: caller.slots[i % caller.k].refill(), before_capture=lambda: [caller.poison(i) for i in range(n)]
            )
            # What one captured call left in its outputs while capturing (poisoned just before): only
            # work that escaped the capture (ran at once, on the legacy default stream say) writes there.
            k0 = pick(range(n), 1)[0]
            after_capture = ([t.clone() for t in caller.outputs(k0, check=False)], caller.slots[k0].seed)
        except Exception as error:
            record["graph_error"] = f"{type(error).__name__}: {error}"[:500]
            clear_cuda_error()
            if not context_alive():
                raise Failed("runtime_error", f"the CUDA context failed while capturing a graph: {record['graph_error']}", fatal=True) from error
        finally:
            send({"stage": "captured"})
    integrity(snap)

    def before_replay(_r):
        for i in range(n):
            caller.reseed(i)
            caller.poison(i)

    if graph is not None:
        before_replay(-1)
        graph.replay_calls()
        try:
            check(caller, pick(range(n), 1), plan, "in-graph-first", probe=True)
            record["checks"] += 1
        except Failed as error:
            # The eager calls were right, the capture succeeded, and a replay of what was captured
            # is wrong. When device work ran while capturing (a launch on the legacy default stream,
            # a synchronous copy), the callable's work escaped the capture: it cannot be captured
            # and is timed by CUPTI, on every call's real work. When nothing ran and the graph still
            # does not do the eager call's work, the work was skipped under capture: refused.
            saved, seed = after_capture
            for t, kept in zip(caller.outputs(k0, check=False), saved):
                t.copy_(kept)
            caller.slots[k0].seed = seed
            try:
                check(caller, [k0], plan, "while-capturing")
            except Failed:
                raise Refused(
                    "graph_divergence",
                    f"the captured calls, replayed on new inputs, gave wrong outputs after the "
                    f"eager calls were right, and no work ran outside the capture: {error}",
                ) from error
            record["checks"] += 1
            record["graph_error"] = (f"the call's work ran while capturing instead of being captured ({error}): not capturable, timed by CUPTI")[:500]
            graph = None
    if graph is not None:
        checked = set(pick(range(replays - 1), 2)) | {replays - 1}

        def after_replay(r):
            for i in range(n):
                caller.count_unwritten(i)
            if r in checked:
                check_timed(caller, pick(range(n), 1), plan, f"in-graph-replay-{r}")
                record["checks"] += 1

        record["in_graph_ns"] = graph.samples(replays, before=before_replay, after=after_replay)
        caller.assert_written("in-graph")
        del graph
        samples, one = ki_timing.graph_replay_samples(caller, flush, eager_n, index=0, prepare=caller.prepare)
        record["graph_replay_ns"] = samples
        del one
        record["method"] = "in_graph"
    else:
        record["method"] = "cupti"
    integrity(snap)

    # 5. latency_cupti: every device activity between markers around each call (the primary figure
    #    when the callable cannot be captured, and the in-graph figure's check when it can).
    state["next"] = 0
    threads = State()
    try:
        samples, kernels = ki_timing.cupti_samples(
            counted, flush, eager_n, first_index=0, prepare=caller.prepare, after=caller.count_unwritten, gate_ns=gate_ns(t_call)
        )
    except ki_windows.WindowError as error:
        raise HarnessError(f"the CUPTI record could not be cut into calls: {error}") from error
    except ki_windows.UnorderedWork as error:
        raise Refused("side_stream", f"work not ordered on the caller's stream: {error}") from error
    threads.after()
    record["cupti_ns"] = samples
    record["kernels_per_call"] = kernels
    caller.assert_written("cupti")
    last = state["next"] - 1
    check_timed(caller, [last % caller.k], plan, "cupti-last")
    record["checks"] += 1
    integrity(snap)
    State().after()
    caller.slots = None
    return record


def run_workload(job, flush, snap):
    trials = []
    ledger = ki_windows.SeedLedger()

    def answer(**fields):
        return {"final": True, "trials": trials, "seeds": ledger.report(), "launch_overhead_ns": LAUNCH_OVERHEAD_NS, **fields}

    try:
        for plan in job["trials"]:
            trials.append(run_trial(plan, job["protocol"], flush, snap, ledger))
        torch.cuda.empty_cache()
        return answer(verdict="passed")
    except Refused as error:
        return answer(verdict="suspected_reward_hack", check=error.check, reason=str(error)[:1500])
    except HarnessError as error:
        return answer(verdict="harness_error", reason=str(error)[:1500], fatal=not context_alive())
    except Failed as error:
        fatal = error.fatal or not context_alive()
        return answer(verdict=error.verdict, reason=str(error)[:1500], fatal=fatal)
    except Exception as error:
        fatal = not context_alive()
        text = f"{type(error).__name__}: {error}"
        return answer(verdict="runtime_error", reason=text[:1500], fatal=fatal, traceback=traceback.format_exc()[-3000:])


def warm(flush):
    """Every path the worker uses, once, before any code under test: lazy attributes settle."""
    global LAUNCH_OVERHEAD_NS
    plan = {
        "seed": 1,
        "tensors": [
            {"name": "x", "source": "random", "dtype": "float32", "shape": [1024]},
            {"name": "h", "source": "random", "dtype": "float8_e4m3fn", "shape": [64]},
            {"name": "i", "source": "random", "dtype": "int32", "shape": [64]},
            {"name": "b", "source": "random", "dtype": "bool", "shape": [64]},
        ],
    }
    slot = ki_inputs.Slot(plan)
    slot.fill(2)
    x = slot.values["x"]
    y = torch.empty_like(x)
    ki_timing.eager_samples(lambda i: y.copy_(x), flush, 1, 2, prepare=lambda i: slot.refill())
    ki_timing.InGraph(lambda i: y.copy_(x), flush, 2, refill=lambda i: slot.refill()).samples(2)
    ki_timing.graph_replay_samples(lambda i: y.copy_(x), flush, 2)
    # The profiler loads lazily: a first use after the snapshot would read as a monkey patch.
    ki_timing.cupti_samples(lambda i: y.copy_(x), flush, 2)
    LAUNCH_OVERHEAD_NS = ki_timing.launch_overhead_ns()
    ki_timing.eager_samples(lambda i: y.copy_(x), flush, 1, 2, sync_probes=[])
    torch.isnan(y).sum()
    pending_device_work_ns()
    ki_exchange.Exported(1 << 20).free()
    State().after()
    _synchronize()


LAUNCH_OVERHEAD_NS = None


def main():
    # Started ahead of its turn (while the previous solution runs), the worker warms up at once: a
    # context, a few small kernels and one small graph, short next to any timed workload.
    torch.cuda.init()
    if os.environ.get("KI_MEMORY_FRACTION"):
        torch.cuda.set_per_process_memory_fraction(float(os.environ["KI_MEMORY_FRACTION"]))
    flush = ki_timing.L2Flush(ki_timing.flush_bytes_for())
    warm(flush)
    snap = snapshot()
    while True:
        job = receive()
        op = job.get("op")
        try:
            if op == "hello":
                send({"final": True, "ok": True, "pid": os.getpid(), "torch": torch.__version__})
            elif op == "load":
                try:
                    before = State()
                    info = load(job)
                    before.after("importing the solution")
                    integrity(snap)
                    send({"final": True, "ok": True, **info})
                except Refused as error:
                    send({"final": True, "ok": False, "verdict": "suspected_reward_hack", "check": error.check, "reason": str(error)})
                except Failed as error:
                    send({"final": True, "ok": False, "verdict": error.verdict, "reason": str(error)[:1500]})
            elif op == "warm":
                # A baseline's first call on a small plan (FlashInfer compiles its kernels here).
                slot = ki_inputs.Slot(job["plan"])
                slot.fill(job["plan"]["seed"])
                caller = Caller(job["plan"], [slot], ki_windows.SeedLedger())
                caller(0)
                _synchronize()
                send({"final": True, "ok": True})
            elif op == "workload":
                send(run_workload(job, flush, snap))
            else:
                send({"final": True, "ok": False, "verdict": "runtime_error", "reason": f"unknown op {op!r}"})
        except SystemExit:
            raise
        except Exception as error:
            send(
                {
                    "final": True,
                    "ok": False,
                    "verdict": "runtime_error",
                    "reason": f"{type(error).__name__}: {error}"[:1500],
                    "traceback": traceback.format_exc()[-3000:],
                }
            )


if __name__ == "__main__":
    main()
