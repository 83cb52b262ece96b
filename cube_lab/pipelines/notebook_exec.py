"""Run a notebook into a copy: ``python -m cube_lab.pipelines.notebook_exec SRC DEST``.

The original is never written; papermill injects the parameters after the cell
tagged ``parameters`` (or at the top) and streams cell output to our stdout, which
the runner sends to the node's log.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(prog="cube_lab.pipelines.notebook_exec")
    parser.add_argument("source")
    parser.add_argument("output")
    parser.add_argument("--parameters", default="{}")
    args = parser.parse_args()
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = Path(args.source)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    print(f"executing {source.name} into {args.output}", flush=True)
    try:
        papermill.execute_notebook(
            str(source),
            args.output,
            parameters=json.loads(args.parameters),
            cwd=str(source.parent),
            log_output=True,
            progress_bar=False,
            stdout_file=sys.stdout,
            stderr_file=sys.stderr,
        )
    except PapermillExecutionError as exc:
        print(f"cell {exc.exec_count} failed: {exc.ename}: {exc.evalue}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
