"""The script a fine-tuning training job runs (torchrun needs a file): the trainer's main.

A file of its own folder, so that running it puts nothing but itself on ``sys.path``."""

import sys

from cube_lab.finetune.trainer import main

if __name__ == "__main__":
    sys.exit(main())
