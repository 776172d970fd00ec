# SPDX-License-Identifier: GPL-2.0
"""The guest suite's LBA stamps (tests/guest/dmtest.py): the kept 1 MiB
runs give exactly what the plain definition gives, across run ends, for
any length and seed, and past the number of runs kept."""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "guest"))
import dmtest  # noqa: E402


def plain(first, count, seed):
    return b"".join(struct.pack("<QQ", s, seed) * 32 for s in range(first, first + count))


def test_kept_runs_give_the_plain_stamps():
    rng = random.Random(1)
    run = dmtest.STAMP_RUN
    cases = [(0, run, 7), (run - 3, 6, 7), (5 * run, 3 * run, 2), (5 * run + 1, 3 * run - 2, 2)]
    cases += [(rng.randrange(40 * run), rng.randrange(1, 3 * run), rng.randrange(1, 4))
              for _ in range(200)]
    for first, count, seed in cases:
        assert dmtest.stamp_sectors(first, count, seed) == plain(first, count, seed), \
            (first, count, seed)
    # more runs than are kept: the oldest go, and what comes back is the same
    for r in range(dmtest.STAMP_RUNS_KEPT + 5):
        dmtest.stamp_sectors(r * run, run, 9)
    assert len(dmtest._stamp_runs) == dmtest.STAMP_RUNS_KEPT
    assert dmtest.stamp_sectors(0, 2 * run, 9) == plain(0, 2 * run, 9)
