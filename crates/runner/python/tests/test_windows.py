"""Unit tests of ki_windows (no torch, no GPU): run by .ci/run with `python3 -m unittest`."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ki_windows  # noqa: E402
from ki_windows import GATE_NAME, MARKER_NAME, SeedLedger, UnorderedWork, WindowError, call_windows, union_ns  # noqa: E402


def marker(start):
    return (MARKER_NAME, start, start + 1)


class UnionTest(unittest.TestCase):
    def test_disjoint_overlapping_nested_and_empty(self):
        self.assertEqual(union_ns([]), 0)
        self.assertEqual(union_ns([(0, 10), (20, 25)]), 15)
        self.assertEqual(union_ns([(0, 10), (5, 15)]), 15)
        self.assertEqual(union_ns([(0, 100), (10, 20), (30, 40)]), 100)
        self.assertEqual(union_ns([(5, 5), (7, 3)]), 0)
        self.assertEqual(union_ns([(10, 20), (0, 5), (20, 30)]), 25)


def gate(start, end):
    return (GATE_NAME, start, end)


def window(open_at, held_until, work, close_at, fence_at):
    """One call's activities as cupti_samples records them."""
    return [marker(open_at), gate(open_at + 2, held_until), *work, marker(close_at), marker(fence_at)]


class WindowsTest(unittest.TestCase):
    def test_every_launcher_inside_the_markers_counts_and_nothing_outside(self):
        activities = [
            ("flush fill", 0, 50),  # before the first marker: not counted
            *window(
                60,
                70,
                [
                    ("triton_kernel", 70, 80),
                    ("legacy_stream_kernel", 75, 90),  # overlaps: the union counts it once
                    ("Memcpy DtoD (Device -> Device)", 95, 97),
                ],
                100,
                105,
            ),
            ("poison check", 106, 108),  # after the fence: not counted
            ("refill _fill", 110, 150),  # between calls: not counted
            ("flush fill", 150, 200),
            *window(210, 230, [("extension_kernel", 230, 250)], 251, 260),
        ]
        windows = call_windows(activities, 2)
        self.assertEqual(windows[0], (20 + 2, 3, 27))
        self.assertEqual(windows[1], (20, 1, 20))

    def test_a_call_that_ran_nothing_has_zero_time(self):
        self.assertEqual(call_windows(window(0, 10, [], 12, 20), 1), [(0, 0, 0)])

    def test_missing_or_extra_markers_are_a_harness_error(self):
        with self.assertRaises(WindowError):
            call_windows([marker(0), gate(2, 4), ("k", 4, 5), marker(6)], 1)
        with self.assertRaises(WindowError):
            call_windows([*window(0, 4, [("k", 4, 5)], 6, 8), marker(9)], 1)

    def test_a_window_without_its_gate_is_a_harness_error(self):
        with self.assertRaises(WindowError):
            call_windows([marker(0), ("k", 4, 5), marker(6), marker(8)], 1)

    def test_work_straddling_the_opening_marker_is_a_harness_error(self):
        with self.assertRaises(WindowError):
            call_windows([("k", -5, 3), *window(0, 10, [], 12, 20)], 1)

    def test_order_of_the_record_does_not_matter(self):
        activities = list(reversed(window(0, 12, [("k", 12, 18)], 20, 30)))
        self.assertEqual(call_windows(activities, 1), [(6, 1, 6)])

    def test_work_joined_back_from_a_side_stream_is_the_call_s(self):
        # Two streams, both after the gate, both done before the closing marker starts.
        activities = window(0, 10, [("main", 10, 30), ("side", 11, 40)], 41, 50)
        self.assertEqual(call_windows(activities, 1), [(30, 2, 30)])

    def test_work_never_joined_back_is_refused(self):
        # The side stream waited for the caller's stream (starts after the gate) but the caller's
        # stream went on at once: its closing marker starts while the side kernel still runs.
        activities = window(0, 10, [("side_rmsnorm", 12, 60)], 11, 70)
        with self.assertRaises(UnorderedWork) as caught:
            call_windows(activities, 1)
        self.assertIn("side_rmsnorm", str(caught.exception))
        self.assertIn("never joined back", str(caught.exception))

    def test_work_that_does_not_wait_for_the_caller_s_stream_is_refused(self):
        activities = window(0, 100, [("independent", 5, 20)], 101, 110)
        with self.assertRaises(UnorderedWork) as caught:
            call_windows(activities, 1)
        self.assertIn("does not wait", str(caught.exception))

    def test_a_refusal_names_how_early_and_on_which_stream(self):
        activities = [(*a, 7) for a in window(0, 100, [], 101, 110)] + [("independent", 5_000, 20_000, 13)]
        activities = [(n, s * 1000, e * 1000, st) if n != "independent" else (n, s, e, st) for n, s, e, st in activities]
        with self.assertRaises(UnorderedWork) as caught:
            call_windows(activities, 1)
        self.assertIn("started 95.0 µs before the gate ended", str(caught.exception))
        self.assertIn("on stream 13; the caller's is stream 7", str(caught.exception))

    def test_a_dependent_launch_on_the_caller_s_stream_is_ordered(self):
        # A programmatic dependent launch starts as the gate's block exits, before its end is
        # recorded; on the caller's stream that is stream order, not a race.
        activities = [(*a, 7) for a in window(0, 100, [], 110, 120)] + [("pdl_kernel", 98, 105, 7)]
        self.assertEqual(call_windows(activities, 1), [(7, 1, 7)])
        moved = [(*a, 7) for a in window(0, 100, [], 110, 120)] + [("pdl_kernel", 98, 105, 13)]
        with self.assertRaises(UnorderedWork):
            call_windows(moved, 1)

    def test_only_the_first_gate_holds_the_stream(self):
        # A solution that sleeps on its own is work like any other.
        activities = window(0, 10, [(GATE_NAME, 10, 25)], 26, 30)
        self.assertEqual(call_windows(activities, 1), [(15, 1, 15)])


class LedgerTest(unittest.TestCase):
    def test_seeds_never_repeat_and_checks_are_kept(self):
        ledger = SeedLedger()
        ledger.use(1, timed=False)
        ledger.use(2, timed=True)
        ledger.use(3, timed=True)
        ledger.check(1)
        ledger.check(3)
        with self.assertRaises(ValueError):
            ledger.use(2, timed=True)
        self.assertEqual(ledger.report(), {"timed": [2, 3], "checked": [1, 3], "used": 3})

    def test_module_needs_no_torch(self):
        # In a fresh interpreter: other tests of this run (test_compare, on the device) import torch.
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        probe = "import sys; sys.path.insert(0, sys.argv[1]); import ki_windows; print('torch' in sys.modules)"
        found = subprocess.run([sys.executable, "-c", probe, here], capture_output=True, text=True, check=True).stdout
        self.assertEqual(found.strip(), "False")
        self.assertTrue(hasattr(ki_windows, "call_windows"))


if __name__ == "__main__":
    unittest.main()
