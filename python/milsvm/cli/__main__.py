"""``python -m milsvm.cli``: the ``milsvm`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
