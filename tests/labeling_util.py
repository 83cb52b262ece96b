"""Helpers for the labeling tests: tiny generated images and texts, and a ready project."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from PIL import Image

from cube_lab.identity import Caller
from cube_lab.workspace import Workspace

SIZES = [(40, 30), (32, 48), (64, 64)]


def make_images(folder: Path, count: int, nested: bool = False) -> list[str]:
    """``count`` small PNGs (sizes cycle through SIZES); returns names in dataset order."""
    names = []
    for i in range(count):
        sub = f"part{i % 2}/" if nested else ""
        name = f"{sub}img{i:04d}.png"
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", SIZES[i % len(SIZES)], (i * 37 % 256, i * 11 % 256, 90)).save(path)
        names.append(name)
    return sorted(names)


def make_csv(path: Path, texts: list[str], extra: bool = True) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text", "source"] if extra else ["text"])
        for i, text in enumerate(texts):
            writer.writerow([text, f"s{i}"] if extra else [text])
    return path


def image_project(
    ws: Workspace,
    caller: Caller,
    folder: Path,
    count: int = 6,
    type: str = "image-bbox",
    project: str | None = None,
    **options: Any,
) -> Any:
    make_images(folder, count)
    ws.datasets.create(caller, "pics", folder, project=project)
    return ws.labeling.create(
        caller,
        "pets",
        dataset="pics",
        type=type,
        labels=["cat", "dog"],
        project=project,
        **options,
    )


def team(ws: Workspace, owner: Caller, *members: str, name: str = "team") -> str:
    ws.projects.create(owner, name)
    for member in members:
        ws.projects.set_member(owner, name, member, "member")
        ws.projects.accept(Caller(member), name)  # a member once they accept
    return name
