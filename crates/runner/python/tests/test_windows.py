"""Unit tests of ki_windows (no torch, no GPU): run by .ci/run with `python3 -m unittest`."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ki_windows  # noqa: E402
from ki_windows import MARKER_NAME, SeedLedger, WindowError, call_windows, union_ns  # noqa: E402


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


class WindowsTest(unittest.TestCase):
    def test_every_launcher_inside_the_markers_counts_and_nothing_outside(self):
        activities = [
            ("flush fill", 0, 50),  # before the first marker: not counted
            marker(60),
            ("triton_kernel", 70, 80),
            ("legacy_stream_kernel", 75, 90),  # overlaps: the union counts it once
            ("Memcpy DtoD (Device -> Device)", 95, 97),
            marker(100),
            ("refill _fill", 110, 150),  # between calls: not counted
            ("flush fill", 150, 200),
            marker(210),
            ("extension_kernel", 220, 240),
            marker(250),
        ]
        windows = call_windows(activities, 2)
        self.assertEqual(windows[0], (20 + 2, 3, 27))
        self.assertEqual(windows[1], (20, 1, 20))

    def test_a_call_that_ran_nothing_has_zero_time(self):
        self.assertEqual(call_windows([marker(0), marker(10)], 1), [(0, 0, 0)])

    def test_missing_or_extra_markers_are_a_harness_error(self):
        with self.assertRaises(WindowError):
            call_windows([marker(0), ("k", 2, 3)], 1)
        with self.assertRaises(WindowError):
            call_windows([marker(0), marker(5), marker(9), ("k", 2, 3)], 1)

    def test_work_straddling_a_marker_is_a_harness_error(self):
        with self.assertRaises(WindowError):
            call_windows([marker(0), ("k", 5, 30), marker(20)], 1)

    def test_order_of_the_record_does_not_matter(self):
        activities = [("k", 12, 18), marker(20), marker(0)]
        self.assertEqual(call_windows(activities, 1), [(6, 1, 6)])


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
        self.assertNotIn("torch", sys.modules)
        self.assertTrue(hasattr(ki_windows, "call_windows"))


if __name__ == "__main__":
    unittest.main()
