"""``python -m taskbfs``: the ``taskbfs`` command (:mod:`taskbfs.cli`)."""

import sys

from taskbfs.cli import main

if __name__ == "__main__":
    sys.exit(main())
