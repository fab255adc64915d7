"""Shared pytest configuration for cyrbm's tests."""
import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: takes more than about 20 s (deselect with -m 'not slow')")
