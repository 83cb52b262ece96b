"""Read and write Elyra ``.pipeline`` files (pipeline-flow v3, Elyra pipeline version 8).

Older Elyra versions 0-7 are migrated on load, one Elyra step per version; anything newer,
or not a pipeline at all, is refused with a ``PipelineFormatError`` that names the field.
What loads but Elyra's validator would refuse (no nodes, no version, a schema version other
than 3.0, ...) is left to ``validation``, so the editor can still open the file to fix it.
The reader never lets a Python exception other than that escape, whatever the input.

One module per step: ``read`` (a file, text or document into a ``Pipeline``), ``migrate``
(Elyra versions 0-7 to 8), ``flatten`` (supernodes into one graph), ``write`` (back to a
document); ``common`` holds the versions and the error.
"""

from .common import ELYRA_VERSION, SCHEMA_URL, SCHEMA_VERSION, PipelineFormatError
from .flatten import Flat, flatten
from .read import from_document, load, loads
from .write import dumps, new_document, save, to_document

__all__ = [
    "ELYRA_VERSION",
    "SCHEMA_URL",
    "SCHEMA_VERSION",
    "Flat",
    "PipelineFormatError",
    "dumps",
    "flatten",
    "from_document",
    "load",
    "loads",
    "new_document",
    "save",
    "to_document",
]
