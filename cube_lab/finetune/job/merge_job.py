"""The script a merge job runs (a file, for the training service): the merge's main.

A file of its own folder, so that running it puts nothing but itself on ``sys.path``."""

import sys

from cube_lab.finetune.merging import main

if __name__ == "__main__":
    sys.exit(main())
