"""``python -m milsvm``: the ``milsvm`` command (see :mod:`milsvm.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
