"""One escaping of user and group names into folder, OS account, Kubernetes and project names.

A hub user or group name is any text (张三, ``Alice``, ``j.smith``, an e-mail address); the
places it names are not: a folder, a system account, a Kubernetes object or label, a project.
Everything here goes through :func:`slug`, so that distinct names never share a home, a
project or a pod, and a name that is already safe stays readable:

- **Plain names are themselves.** A name made of lower-case ASCII letters and digits, with
  single ``-`` between them (``alice``, ``student1``, ``ml-course``), is its own slug. These
  are the names that looked the same before (``safe_dirname``, the old ``k8s_name``), so
  their homes, project folders, personal projects and volume claims do not move.
- **Every other name is escaped**: ``x--`` and then the name with every byte of its UTF-8
  form that is not a lower-case letter or digit written ``-hh`` (two lower-case hex digits;
  ``-`` itself is ``-2d``). This is the escaping KubeSpawner's ``escape_slug`` makes with
  ``escapism`` (``escapism.escape(name, safe=a-z0-9, escape_char="-").lower()``)::

      张三  -> x---e5-bc-a0-e4-b8-89      Alice -> x---41lice
      a.b   -> x--a-2eb                   a-b   -> a-b (plain)

  The escaped part never holds ``--`` (a ``-`` is always followed by two hex digits), so
  ``x--...`` can never be a plain name, and it is reversible: :func:`unslug`.
- **Too long for the place** (an OS account has 32 characters, a Kubernetes label 63, a
  folder 255 bytes): the start of the slug, ``---``, and the first 10 hex digits of the
  SHA-256 of the whole name (``x---e5-bc-a0-e4-b8-89-e5-bc---3f1c2a9b0d``). This form is
  *not* reversible; it is collision-free in practice (two names collide only if they share
  the readable start *and* 40 bits of hash), and it can never equal an unhashed slug: only a
  hashed slug has ``---`` after its first character.

The output is always lower case ASCII (``[a-z0-9-]``), starts with a letter or digit (a
letter where the target wants one), ends with one, and is never empty, so the same string
is a valid folder name, a valid personal project name, a DNS-1123 label (and an RFC 1035 one
where it starts with a letter) and a ``useradd`` account name.
"""

from __future__ import annotations

import hashlib
import re

from .locale.messages import _t

PLAIN = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")  # whole names only: PLAIN.fullmatch
ESCAPED = "x--"  # what an escaped slug starts with (a plain name cannot hold "--")
HASHED = "---"  # between a shortened slug and its hash
HASH_LEN = 10
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_HEX = re.compile(r"-([0-9a-f]{2})")

FOLDER_MAX = 255  # bytes of a file name on every file system we run on
ACCOUNT_MAX = 32  # useradd's limit
LABEL_MAX = 63  # a DNS-1123 label, a label value, a namespace
PROJECT_MAX = 100  # room under the project name limit (128) for "-2" and "<creator>-"


def escape(name: str) -> str:
    """``name`` with every UTF-8 byte outside ``[a-z0-9]`` written ``-hh`` (reversible)."""
    data = name.encode("utf-8", "surrogatepass")
    return "".join(chr(b) if b in _SAFE else f"-{b:02x}" for b in data)


def unescape(text: str) -> str:
    """The inverse of :func:`escape`; ``ValueError`` for text ``escape`` cannot make."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "-":
            m = _HEX.match(text, i)
            if not m:
                raise ValueError(_t("not an escaped name: {text!r}", text=text))
            out.append(int(m.group(1), 16))
            i += 3
        elif ord(c) < 128 and ord(c) in _SAFE:
            out.append(ord(c))
            i += 1
        else:
            raise ValueError(_t("not an escaped name: {text!r}", text=text))
    return out.decode("utf-8", "surrogatepass")


def slug(name: str, max_len: int = FOLDER_MAX, *, letter_first: bool = False) -> str:
    """The safe, distinct name of ``name`` (module docstring), at most ``max_len`` long.

    ``letter_first``: the target wants a letter first (RFC 1035 names, OS accounts), so a
    plain name starting with a digit is escaped too (``2024-cv`` -> ``x--2024-2dcv``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(_t("a name to escape must be a non-empty string"))
    if max_len < 2 * HASH_LEN:
        raise ValueError(
            _t("names shorter than {n} characters cannot stay distinct", n=2 * HASH_LEN)
        )
    plain = bool(PLAIN.fullmatch(name)) and not (letter_first and name[0].isdigit())
    full = name if plain else ESCAPED + escape(name)
    if len(full) <= max_len:
        return full
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LEN]
    return full[: max_len - len(HASHED) - HASH_LEN].rstrip("-") + HASHED + digest


def is_hashed(text: str) -> bool:
    """Whether ``text`` is a shortened slug (the one form :func:`unslug` cannot reverse):
    only those hold ``---`` after their first two characters (``x---`` starts an escaped
    name whose first byte was escaped)."""
    return text.find(HASHED, 2) >= 0


def unslug(text: str) -> str:
    """The name whose :func:`slug` is ``text``; ``ValueError`` for a shortened slug (its
    hash cannot be reversed) or text no slug looks like."""
    if is_hashed(text):
        raise ValueError(_t("{text!r} is a shortened name: its hash cannot be reversed", text=text))
    if text.startswith(ESCAPED):
        return unescape(text[len(ESCAPED) :])
    if PLAIN.fullmatch(text):
        return text
    raise ValueError(_t("not a slug: {text!r}", text=text))


# -- the places a name goes --------------------------------------------------------------


def folder_name(name: str) -> str:
    """A user's home or a project group's shared folder (``users/<this>``)."""
    return slug(name, FOLDER_MAX)


def account_name(name: str) -> str:
    """A system account for a user (lower case, a letter first, at most 32 characters)."""
    return slug(name, ACCOUNT_MAX, letter_first=True)


def project_name(name: str) -> str:
    """The name of a user's personal project."""
    return slug(name, PROJECT_MAX)


def label_value(name: str) -> str:
    """A Kubernetes label value naming a user or group (at most 63 characters)."""
    return slug(name, LABEL_MAX)


def object_name(name: str, prefix: str, max_len: int = LABEL_MAX) -> str:
    """A Kubernetes object name (a DNS-1123 label) for a user or group: ``prefix`` and the
    slug, within ``max_len`` in all. ``prefix`` is fixed per kind of object (``cube-``,
    ``cube-project-``), so distinct names keep distinct objects; with an empty prefix the
    slug starts with a letter (RFC 1035, as Services and namespaces want)."""
    if prefix and not re.fullmatch(r"[a-z][a-z0-9-]*", prefix):
        raise ValueError(
            _t("a Kubernetes name prefix must be lower case: {prefix!r}", prefix=prefix)
        )
    return prefix + slug(name, max_len - len(prefix), letter_first=not prefix)


# -- what the names were before this module (for moving folders over) --------------------


def legacy_folder_name(name: str) -> str:
    """The folder name the hub gave ``name`` before: other characters replaced by ``_``,
    leading dots dropped. Lossy (张三 and 李四 were both ``__``): used only to find a
    folder to move, and only when it is ``name`` itself (:func:`legacy_folder_is_own`)."""
    cleaned = re.sub(r"[^A-Za-z0-9._@+-]", "_", name).lstrip(".")
    return cleaned or "_"


def legacy_folder_is_own(name: str) -> bool:
    """Whether the old folder of ``name`` was named exactly ``name``: then it was this
    user's (or group's) alone to the same degree as today's plain names."""
    return legacy_folder_name(name) == name
