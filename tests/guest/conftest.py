# SPDX-License-Identifier: GPL-2.0
"""Fixtures of the guest suite: loop devices, unique dm names."""
import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import dmtest  # noqa: E402

_names = itertools.count()

if os.geteuid() != 0 or not os.path.exists("/dev/mapper/control"):
    pytest.exit("the guest suite runs inside the guest: tests/vm/run -- python3 -m pytest tests/guest",
                returncode=4)


@pytest.fixture
def dmname(request):
    """A fresh device name per use: dmname() -> 'rc-<test>-<n>'."""
    base = request.node.name.replace("[", "-").replace("]", "")[:40]
    return lambda: f"rc-{base}-{next(_names)}"


@pytest.fixture
def loop64():
    """A 64 MiB loop device over a file in the guest's /tmp."""
    with dmtest.loop_device(64 << 20) as dev:
        yield dev


@pytest.fixture
def loop128():
    with dmtest.loop_device(128 << 20) as dev:
        yield dev
