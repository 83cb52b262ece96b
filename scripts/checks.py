"""Run cube-lab's checks as stages, the independent ones side by side, and say how long each took.

    python scripts/checks.py test     # every check (`make test`, what .ci/run calls)
    python scripts/checks.py check    # the inner loop (`make check`): lint, the fast tier, jest
    python scripts/checks.py test --only pytest,jest   # some stages of a plan

A plan is a list of waves; the stages of one wave run at the same time, each with its output
in ``build/checks/<stage>.log``, printed whole (never interleaved) when the stage ends. The
next wave starts when every stage of this one has ended, so a stage that needs the machine to
itself (the timed UI tests) can have it. Every stage runs even when an earlier one failed (but
the set-up, which all need), so one run reports every failure; the exit status is non-zero
when any stage failed. The last
lines are a table of the stages with their wall time and result, and each test runner's own
closing line.

The stages' commands are the Makefile's (``make -s <target>``), so ``make pytest`` and this
script run the same thing.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOGS = REPO / "build" / "checks"


@dataclass
class Stage:
    name: str
    command: list[str]
    # the line of the runner's output that sums it up (pytest's "N passed ...", jest's "Tests:")
    summary_marks: tuple[str, ...] = ()
    status: str = "not run"
    seconds: float = 0.0
    summary: str = ""
    failures: list[str] = field(default_factory=list)


def make(target: str, *marks: str) -> Stage:
    return Stage(target, ["make", "-s", "--no-print-directory", target], marks)


PYTEST_MARKS = (" passed", " failed", " error", "no tests ran")
# lines of a failed stage's log that say what failed: pytest's short summary, Playwright's
# failed tests and errors, a web server that could not start, make's own error
FAILURE_LINE = re.compile(r"^(FAILED|ERROR) |✘|^\s+\d+\) \[|^\s+Error: |already used|^make.*\*\*\*")
PLANS: dict[str, list[list[Stage]]] = {
    # lint and jest are quick and light; pytest's workers take the cores while jest runs. The
    # UI suites come last: Playwright's timeouts are tuned for a machine they have to
    # themselves, and they share nothing with pytest.
    "test": [
        [make("test-setup")],
        [make("lint"), make("jest", "Tests:"), make("wheel", "wheel OK")],
        [make("pytest", *PYTEST_MARKS)],
        [make("galata", " passed", " failed", " flaky")],
        # after Galata: beside its two browsers, a hub's spawns and stops ran past the spec's
        # timeouts (measured at load 15)
        [make("hub-ui", " passed", " failed")],
    ],
    "check": [
        [make("install-test")],
        [make("lint"), make("jest", "Tests:"), make("pytest-fast", *PYTEST_MARKS)],
    ],
}


def run_stage(stage: Stage, lock: threading.Lock) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{stage.name}.log"
    start = time.monotonic()
    with open(log, "wb") as out:
        code = subprocess.call(stage.command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    stage.seconds = time.monotonic() - start
    stage.status = "passed" if code == 0 else f"FAILED (exit {code})"
    text = log.read_text(errors="replace")
    marked = [ln for ln in text.splitlines()[-60:] if any(m in ln for m in stage.summary_marks)]
    stage.summary = marked[-1].strip("= ").strip() if marked else ""
    if code != 0:
        stage.failures = [ln.rstrip() for ln in text.splitlines() if FAILURE_LINE.search(ln)]
    with lock:
        print(f"\n===== {stage.name}: {stage.status} in {minutes(stage.seconds)} =====")
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
        sys.stdout.flush()


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{seconds % 60:04.1f}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", choices=sorted(PLANS))
    parser.add_argument("--only", help="comma-separated stage names to run (default: all)")
    args = parser.parse_args(argv)
    waves = PLANS[args.plan]
    if args.only:
        wanted = set(args.only.split(","))
        known = {s.name for wave in waves for s in wave}
        if unknown := wanted - known:
            parser.error(f"no stage {sorted(unknown)} in plan {args.plan!r}: {sorted(known)}")
        waves = [[s for s in wave if s.name in wanted] for wave in waves]
        waves = [wave for wave in waves if wave]
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    lock = threading.Lock()
    began = time.monotonic()
    for wave in waves:
        names = ", ".join(s.name for s in wave)
        print(f"checks: starting {names}", flush=True)
        threads = [threading.Thread(target=run_stage, args=(s, lock)) for s in wave]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if wave[0].name.startswith(("install", "test-setup")) and wave[0].status != "passed":
            print(f"checks: {wave[0].name} failed; nothing else can run", flush=True)
            break
    stages = [s for wave in waves for s in wave]
    print(f"\n===== checks ({args.plan}) in {minutes(time.monotonic() - began)} =====")
    for stage in stages:
        line = f"  {stage.name:<12} {minutes(stage.seconds):>10}  {stage.status}"
        print(line + (f"  ({stage.summary})" if stage.summary else ""))
    print(f"logs: {LOGS.relative_to(REPO)}/")
    for stage in stages:
        if stage.failures:
            print(f"what failed in {stage.name} ({LOGS.relative_to(REPO)}/{stage.name}.log):")
            for line in dict.fromkeys(stage.failures[-40:]):
                print(f"  {line.strip()}")
    # pytest's own closing line, last, as it printed it
    for stage in stages:
        if stage.name.startswith("pytest") and stage.summary:
            print(stage.summary)
    return 0 if all(s.status == "passed" for s in stages) else 1


if __name__ == "__main__":
    sys.exit(main())
