"""Graph files before their format: which format a name has, opening it, its lines and ids.

What it returns
---------------
:func:`_resolve_format` (a format from ``format=`` or the suffix), :func:`_checked_file`,
the openers (compressed or not, for reading or writing), :func:`_numbered_lines` (the
careful scans' lines), the block of lines that start in a byte range
(:func:`_read_block`) and where a line starts or what number it has, and
:func:`_parse_id`: a token as a vertex id, or the :class:`GraphFormatError` saying what
is wrong with it. The format modules (``_edgelist``, ``_mtx``, ``_npz``) and
:mod:`taskbfs.graph.io` share these.
"""

from __future__ import annotations

import bz2
import codecs
import errno
import gzip
import lzma
import os
import re

import numpy as np

from taskbfs.errors import GraphFormatError, InvalidParameterError

#: Format names accepted by ``format=``.
KNOWN_FORMATS = ("mtx", "edgelist", "npz")

#: File suffix -> format.
SUFFIX_FORMATS = {
    ".mtx": "mtx",
    ".mm": "mtx",
    ".txt": "edgelist",
    ".el": "edgelist",
    ".csv": "edgelist",
    ".tsv": "edgelist",
    ".npz": "npz",
}

_COMPRESSED = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}

_INT_RE = re.compile(rb"[+-]?[0-9]+\Z")
_NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_INT64_MAX = np.iinfo(np.int64).max


class GraphFileNotFoundError(GraphFormatError, FileNotFoundError):
    """The graph file does not exist (both a ``GraphFormatError`` and a ``FileNotFoundError``)."""

    def __init__(self, path: str):
        super().__init__("no such file", path)
        self.errno = errno.ENOENT
        self.strerror = "no such file"
        self.filename = path

    def __reduce__(self):
        return type(self), (self.filename,)

    def __str__(self) -> str:  # OSError's would be "[Errno 2] None: 'path'"
        return f"no such file: {self.filename}"


def _checked_file(path, format, directed):
    """``(path, format, directed)`` checked: a known format, an existing file."""
    path = os.fspath(path)
    fmt = _resolve_format(path, format)
    if directed is not None and not isinstance(directed, (bool, np.bool_)):
        raise InvalidParameterError(f"directed must be True, False or None, got {directed!r}")
    if not os.path.exists(path):
        raise GraphFileNotFoundError(path)
    if os.path.isdir(path):
        raise GraphFormatError("is a directory, not a graph file", path)
    return path, fmt, None if directed is None else bool(directed)


def _resolve_format(path: str, format: str | None) -> str:
    if format is not None:
        if format not in KNOWN_FORMATS:
            raise InvalidParameterError(
                f"unknown graph format {format!r}; known formats: {', '.join(KNOWN_FORMATS)}"
            )
        return format
    suffix = _base_suffix(path)
    if suffix not in SUFFIX_FORMATS:
        known = ", ".join(SUFFIX_FORMATS)
        raise InvalidParameterError(
            f"cannot tell the format of {path!r} from its suffix {suffix or '(none)'!r}; "
            f"known suffixes: {known} (optionally + .gz/.bz2/.xz), or pass format= one of "
            f"{', '.join(KNOWN_FORMATS)}"
        )
    fmt = SUFFIX_FORMATS[suffix]
    if fmt == "npz" and os.path.splitext(path)[1].lower() in _COMPRESSED:
        raise InvalidParameterError(f"{path!r}: .npz files are zip archives; do not compress them")
    return fmt


def _base_suffix(path: str) -> str:
    """The suffix that names the format, looking through a compression suffix."""
    root, suffix = os.path.splitext(path)
    if suffix.lower() in _COMPRESSED:
        suffix = os.path.splitext(root)[1]
    return suffix.lower()


def _open_binary(path: str):
    suffix = os.path.splitext(path)[1].lower()
    return _COMPRESSED.get(suffix, open)(path, "rb")


def _open_text_for_writing(path: str):
    suffix = os.path.splitext(path)[1].lower()
    opener = _COMPRESSED.get(suffix, open)
    return opener(path, "wt", newline="\n", encoding="utf-8")


def _open_binary_for_writing(path: str):
    suffix = os.path.splitext(path)[1].lower()
    return _COMPRESSED.get(suffix, open)(path, "wb")


def _numbered_lines(path: str):
    """Yield ``(lineno, stripped bytes)`` for every line, 1-based; bad compression or
    decoding becomes a GraphFormatError at the line where it happened."""
    lineno = 0
    try:
        with _open_binary(path) as f:
            for lineno, raw in enumerate(f, 1):  # noqa: B007 (lineno used after the loop)
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8) :]
                yield lineno, raw.strip()
    except (OSError, EOFError, lzma.LZMAError) as exc:
        raise GraphFormatError(f"cannot read the file ({exc})", path, lineno + 1) from None


def _check_text(text: bytes, path: str, lineno: int) -> None:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        raise GraphFormatError("not UTF-8 text (is this a binary file?)", path, lineno) from None


def _read_block(path: str, start: int, stop: int) -> tuple[int, bytes]:
    """``(begin, block)``: the bytes of the lines of a file that start at an offset in
    ``[start, stop)``, from ``begin``, the first one's offset."""
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            f.readline()  # the rest of a line that started before ``start``
        begin = f.tell()
        block = f.read(max(0, stop - begin)) if begin < stop else b""
        if block and not block.endswith(b"\n"):
            block += f.readline()  # the line that starts before ``stop`` ends after it
    return begin, block


def _line_number(path: str, offset: int) -> int:
    """The 1-based number of the line starting at byte ``offset`` (counts the lines
    before it: only on the way to an error)."""
    count = 0
    with open(path, "rb") as f:
        while f.tell() < offset:
            count += f.read(min(1 << 24, offset - f.tell())).count(b"\n")
    return count + 1


def _offset_of_line(f, line: int) -> int:
    """The byte offset of the 1-based ``line`` of the binary file ``f``."""
    for _ in range(line - 1):
        f.readline()
    return f.tell()


def _split(body: bytes, sep: bytes | None) -> list[bytes]:
    if sep is None:
        return body.split()
    return [t.strip().strip(b"\"'") for t in body.split(sep)]


def _strip_comment(text: bytes) -> bytes:
    """Drop everything from the first ``#`` or ``%``."""
    for ch in (b"#", b"%"):
        cut = text.find(ch)
        if cut >= 0:
            text = text[:cut]
    return text.strip()


def _parse_id(token: bytes, path: str, lineno: int, what: str = "vertex id") -> int:
    """A token as a non-negative int, or a GraphFormatError saying what is wrong with it."""
    shown = token.decode("utf-8", "replace")
    if _INT_RE.match(token):
        if len(token.lstrip(b"+-0")) > 19:  # int() refuses over 4,300 digits; 2**63 has 19
            raise GraphFormatError(f"{what} {shown[:20]}... ({len(token)} characters) is too "
                                   f"large (above 2**63 - 1)", path, lineno)
        value = int(token)
        if value < 0:
            raise GraphFormatError(f"negative {what} {shown}", path, lineno)
        if value > _INT64_MAX:
            raise GraphFormatError(f"{what} {shown} is too large (above 2**63 - 1)", path, lineno)
        return value
    if _NUMBER_RE.match(token):
        raise GraphFormatError(f"{what} {shown!r} is not an integer", path, lineno)
    raise GraphFormatError(f"non-numeric token {shown!r} where a {what} was expected", path, lineno)
