"""``python -m cube_lab.cli``: the ``cube-lab`` command."""

import sys

from . import main

sys.exit(main())
