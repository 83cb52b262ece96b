"""Model artifacts on disk: staged first, moved into place by one rename.

Layout under ``<data_dir>/artifacts``::

    models/<model id>/<version>/<artifact name>   committed versions
    .staging/<uuid>/<artifact name>               being copied or saved
    .trash/<uuid>/                                removed, deleted after commit

A copy that fails leaves only a staging folder (removed at once, and swept at
start-up after a crash); a database insert that fails removes what was moved.

What is copied follows the one rule of ``cube_lab.containment``: a symbolic link inside
the folder being registered is followed only when it leads to something inside that
folder; others are left out, so a model never carries a file from elsewhere on the
machine. The file system's root, and a folder that holds this store, are refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from .. import containment
from ..locale.messages import _t

CHUNK = 1 << 20


@dataclass(frozen=True)
class StagedArtifact:
    root: Path  # the staging folder; holds exactly one entry, ``name``
    name: str
    is_dir: bool
    size_bytes: int
    checksum: str
    skipped: tuple[str, ...] = ()  # symbolic links left out of the copy (leading outside)

    @property
    def path(self) -> Path:
        return self.root / self.name


def _hash_file(path: Path, digest: hashlib._Hash, boundary: Path) -> int:
    size = 0
    with containment.open_inside(path, boundary) as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size


def fingerprint(path: Path) -> tuple[int, str]:
    """Total size and a sha256 over file contents (and relative names for folders)."""
    digest = hashlib.sha256()
    if path.is_file():
        return _hash_file(path, digest, path), f"sha256:{digest.hexdigest()}"
    size = 0
    for rel, file in containment.walk(path):
        digest.update(rel.encode() + b"\0")
        size += _hash_file(file, digest, path)
    return size, f"sha256:{digest.hexdigest()}"


class ArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.models = root / "models"
        self.staging = root / ".staging"
        self.trash = root / ".trash"
        for folder in (self.models, self.staging, self.trash):
            folder.mkdir(parents=True, exist_ok=True)

    def sweep(self) -> None:
        """Remove what a crashed process left in staging and trash."""
        for folder in (self.staging, self.trash):
            for entry in folder.iterdir():
                shutil.rmtree(entry, ignore_errors=True)

    def new_staging(self) -> Path:
        folder = self.staging / uuid.uuid4().hex
        folder.mkdir()
        return folder

    def stage_path(self, source: Path) -> StagedArtifact:
        """Copy a file or folder into staging (by the containment rule: links leading out
        of ``source`` are left out); nothing is left behind if the copy fails."""
        self.check_source(source)
        folder = self.new_staging()
        name = source.name or "root"
        target = folder / name
        skipped: list[str] = []
        try:
            containment.copy_tree(source, target, skipped=skipped)
            staged = self.finish_staging(folder, name)
            return dataclasses.replace(staged, skipped=tuple(skipped))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def stage_link(self, artifact: Path) -> StagedArtifact:
        """A committed artifact staged again for another version: its files hard-linked (a
        version's files never change), copied where the file system links none."""
        folder = self.new_staging()
        try:
            containment.link_copy(artifact, folder / artifact.name)
            return self.finish_staging(folder, artifact.name)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def check_source(self, source: Path) -> None:
        """Refuse what must never be copied whole: the file system's root, and a folder
        that holds this store (the copy would copy itself, and every other model)."""
        found = containment.real(source)
        if found == Path(found.anchor):
            raise containment.PathRefused(
                _t("{source} is the root of the file system", source=source),
                _t("Give the model's own file or folder."),
                "root",
            )
        if containment.real(self.root).is_relative_to(found):
            raise containment.PathRefused(
                _t(
                    "{source} holds the model registry's store ({root})",
                    source=source,
                    root=self.root,
                ),
                _t("Give the model's own file or folder, not one that holds cube-lab's data."),
                "root",
            )

    def finish_staging(self, folder: Path, name: str) -> StagedArtifact:
        target = folder / name
        size, checksum = fingerprint(target)
        return StagedArtifact(folder, name, target.is_dir(), size, checksum)

    def discard(self, staged: StagedArtifact) -> None:
        shutil.rmtree(staged.root, ignore_errors=True)

    def version_dir(self, model_id: int, version: int) -> Path:
        return self.models / str(model_id) / str(version)

    def promote(self, staged: StagedArtifact, model_id: int, version: int) -> Path:
        """Move a staged artifact to its final place (one rename on the same file system)."""
        final = self.version_dir(model_id, version)
        if final.exists():  # left by a process that died before its commit: no row owns it
            shutil.rmtree(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staged.root, final)
        return final

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def absolute(self, relative: str) -> Path:
        return self.root / relative

    def move_to_trash(self, path: Path) -> Path | None:
        if not path.exists():
            return None
        target = self.trash / uuid.uuid4().hex
        os.rename(path, target)
        return target

    def restore(self, trashed: Path | None, original: Path) -> None:
        if trashed is not None and trashed.exists():
            original.parent.mkdir(parents=True, exist_ok=True)
            os.rename(trashed, original)

    def purge(self, trashed: Path | None) -> None:
        if trashed is not None:
            shutil.rmtree(trashed, ignore_errors=True)
