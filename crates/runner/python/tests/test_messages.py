"""The workers' lines against the protocol's one schema (no torch, no GPU): run by .ci/run.

`messages.schema.json` is generated from the runner's Rust types (crates/runner/src/verify/messages.rs;
a Rust test keeps it current). Here every key the workers write into a line (the dict literals they
send, a trial's `record[...]`, the keyword fields of a workload's answer) is read from their source
and held to it: a key the schema does not declare, or a key the schema requires that no worker
writes, fails on CI instead of on the GPU."""

import ast
import json
import os
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The functions whose dict literals are lines (or parts of lines) a worker writes, per file.
WRITERS = {
    "ki_judge.py": {"environment", "run_reference", "run_compare", "main"},
    "ki_compare.py": {"compare"},
    "ki_routing.py": {"counts"},
    "ki_solution.py": {"check", "Exchange.ensure", "load", "run_trial", "run_workload", "main"},
    "ki_build.py": None,  # every dict literal: the build worker writes nothing else
    "ki_windows.py": {"SeedLedger.report"},
}


def schema():
    with open(os.path.join(HERE, "messages.schema.json")) as f:
        return json.load(f)


def declared_and_required(document):
    declared, required = set(), set()

    def walk(node):
        if isinstance(node, dict):
            declared.update(node.get("properties", {}))
            required.update(node.get("required", []))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(document)
    return declared, required


def functions(tree):
    """(qualified name, node) of every function and method."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item


def written_keys(node):
    """String keys of dict literals, `record[...] = ` targets, `record.update(k=...)` and the keyword
    fields given to `answer(...)` inside one function."""
    keys = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Dict):
            keys.update(k.value for k in sub.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
        elif isinstance(sub, ast.Assign):
            for target in sub.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in ("record", "env")
                    and isinstance(target.slice, ast.Constant)
                ):
                    keys.add(target.slice.value)
        elif isinstance(sub, ast.Call) and sub.keywords:
            func = sub.func
            named = (
                isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name) and func.value.id == "record"
            ) or (isinstance(func, ast.Name) and func.id == "answer")
            if named:
                keys.update(k.arg for k in sub.keywords if k.arg)
    return keys


def worker_keys():
    keys = {}
    for file, wanted in WRITERS.items():
        with open(os.path.join(HERE, file)) as f:
            tree = ast.parse(f.read(), file)
        found = {name for name, _ in functions(tree)}
        missing = set(wanted or ()) - found
        if missing:
            raise AssertionError(f"{file}: no function {sorted(missing)} (WRITERS names the writers of lines)")
        for name, node in functions(tree):
            if wanted is None or name in wanted:
                for key in written_keys(node):
                    keys.setdefault(key, set()).add(f"{file}:{name}")
    return keys


# Keys of jobs, plans and local state that these functions build for themselves, not lines they write.
NOT_LINES = {"op", "seed", "tensors", "source", "next"}


class SchemaTest(unittest.TestCase):
    def test_every_key_a_worker_writes_is_declared(self):
        declared, _ = declared_and_required(schema())
        undeclared = {k: sorted(v) for k, v in worker_keys().items() if k not in declared and k not in NOT_LINES}
        self.assertEqual(
            undeclared,
            {},
            "keys the workers write that messages.schema.json does not declare "
            "(declare them in crates/runner/src/verify/messages.rs and regenerate the schema)",
        )

    def test_every_required_key_is_written_by_a_worker(self):
        _, required = declared_and_required(schema())
        unwritten = sorted(required - set(worker_keys()))
        self.assertEqual(unwritten, [], "keys the schema requires that no worker writes")

    def test_the_scan_sees_the_lines_it_checks(self):
        keys = worker_keys()
        # A trial's figures, the judge's statistics and the final line's marker are all seen.
        for key in ("cupti_ns", "in_graph_ns", "maxAbsError", "final", "launch_overhead_ns", "so_path", "timed"):
            self.assertIn(key, keys)


if __name__ == "__main__":
    unittest.main()
