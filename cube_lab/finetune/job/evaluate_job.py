"""The script an evaluation job runs (a file, for the training service): its main.

A file of its own folder, so that running it puts nothing but itself on ``sys.path``."""

import sys

from cube_lab.finetune.evaluation import main

if __name__ == "__main__":
    sys.exit(main())
