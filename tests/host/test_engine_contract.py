# SPDX-License-Identifier: GPL-2.0
"""The engine's contract: the kernel glue and the simulator drive the
portable core through the same calls and nothing else.  Neither calls a
policy hook of rc-policy.h (the estimators, C-Aware, the budget, the
streams) nor writes a field of the core's state: they report events
(rc_event()) and set choices through rc-core.h, which routes them."""
import os
import re

import pytest

TOP = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DRIVERS = ["dm-redcap/redcap-target.c", "userspace/sim.c"]
# Pure functions of rc-policy.h that name or parse a value: anyone may call them.
PURE = {"rc_estimator_name", "rc_estimator_parse", "rc_class_name"}


def source(path):
    """@path without its comments."""
    with open(os.path.join(TOP, path)) as f:
        text = f.read()
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def policy_hooks():
    """Every function rc-policy.h declares or defines inline."""
    names = set(re.findall(r"\b(rc_\w+)\s*\(", source("dm-redcap/rc-policy.h")))
    return names - PURE


def test_policy_header_has_hooks():
    """The scan below has something to find (it would pass on an empty set)."""
    hooks = policy_hooks()
    assert {"rc_adapt_disk_done", "rc_caware_record", "rc_budget_read",
            "rc_stream_read"} <= hooks


@pytest.mark.parametrize("path", DRIVERS)
def test_driver_calls_no_policy_hook(path):
    text = source(path)
    called = sorted(h for h in policy_hooks() if re.search(rf"\b{h}\s*\(", text))
    assert called == [], f"{path} calls policy hooks directly: {called}"


@pytest.mark.parametrize("path", DRIVERS)
def test_driver_writes_no_core_field(path):
    """No assignment to a field of struct rc_cache or of its policies' state."""
    text = source(path)
    writes = re.findall(r"\bcache->[\w.]+\s*(?:[-+|&]?=(?!=)|\+\+|--)", text)
    assert writes == [], f"{path} writes core state directly: {writes}"
