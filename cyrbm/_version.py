"""cyrbm's version (the one in pyproject.toml), below every module that records it."""
__version__ = "0.1.0"
