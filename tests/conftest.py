# SPDX-License-Identifier: GPL-2.0
"""Shared pytest configuration for tests/host and tests/guest."""


def pytest_configure(config):
    config.addinivalue_line("markers", "smoke: quick guest tests also run on the second kernel")
    config.addinivalue_line("markers", "vm: host tests that boot guests (slow)")
