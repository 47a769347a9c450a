"""``python -m steerable_sidecar`` runs the ``steerable`` command."""

import sys

from .cli import main

sys.exit(main())
