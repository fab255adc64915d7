"""pytest hooks and fixtures; the exact references themselves live in _reference.py."""
import os

import pytest

import cyrbm
from _reference import tiny_model


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than about 20 s (deselect with -m 'not slow')")


def pytest_report_header(config):
    c = cyrbm.config()
    return (f"cyrbm {c['version']} from {cyrbm.__file__}; OpenMP "
            f"{'on' if c['openmp'] else 'off'}, {c['threads']} threads, BLAS {c['blas']}")


@pytest.fixture
def model86():
    return tiny_model()


try:    # the property-based tests' profiles: "ci" (fixed, small; the default) and "deep"
    from hypothesis import HealthCheck, settings
except ImportError:
    pass
else:
    settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow], database=None)
    settings.register_profile("deep", max_examples=2000, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
