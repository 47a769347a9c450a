"""Tests of the Harbor adapter against Harbor's own classes: they need Harbor (Python 3.12+).

The main suite (Python 3.11, no Harbor) collects nothing here; `.ci/run` runs this folder in a
second virtual environment with the ``harbor`` extra (``pip install -e '.[harbor]' pytest
pytest-asyncio``, then ``python -m pytest tests/harbor_adapter``).
"""

from __future__ import annotations

import importlib.util

# (this folder is not named `harbor`: with tests/ on sys.path it would shadow the package)
collect_ignore_glob = [] if importlib.util.find_spec("harbor") else ["test_*.py"]
