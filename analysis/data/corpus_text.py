"""What text a corpus is: its spec (:class:`CorpusSpec`) and the extraction of the English prose of the Python
standard library (its docstrings, read with ``ast``, and its comments, read with ``tokenize``).

Nothing is downloaded, and the same interpreter always yields the same bytes, so the text is deterministic:

* files are the ``*.py`` files under ``sysconfig.get_paths()["stdlib"]``, visited in sorted order of
  their relative POSIX paths; folders named ``test``, ``tests``, ``idle_test``, ``site-packages``,
  ``dist-packages``, ``__pycache__``, ``encodings`` (generated codec tables) and the ``config-*``
  build folder are skipped, as is any file that fails to decode, tokenize or parse;
* inside a file, docstrings (module, class, function) and comment blocks (consecutive ``#`` lines) are
  put in source order; shebang and coding lines are dropped;
* whitespace is normalised: tabs and runs of spaces become one space, lines are stripped, blank
  lines inside a piece are dropped; pieces are separated by one blank line (``"\\n\\n"``);
* with ``ascii_only`` every non-ASCII and every control character except ``"\\n"`` is removed;
* the text is cut at ``max_bytes`` (UTF-8 bytes) so that building stays fast.

The result depends on the interpreter's version (the standard library changes between releases), so
:meth:`CorpusSpec.cache_key` contains the Python version and the extraction's :data:`FORMAT_VERSION`.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import os
import platform
import re
import sysconfig
import tokenize
from dataclasses import dataclass
from pathlib import Path

from analysis.core.io import content_hash
from analysis.core.progress import bar
from analysis.core.validation import check_bool, check_choice, check_float, check_int

# Bump when the extraction rules above change: it is part of the cache key.
FORMAT_VERSION = 2

ENCODINGS = ("byte", "char")
SOURCES = ("stdlib",)
# Tests, third-party packages and caches; ``encodings`` is skipped because its comments are ~0.7 MB of
# machine-generated codec tables ("0x41 -> LATIN CAPITAL LETTER A"), not prose.
SKIP_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__", "encodings"})

_SPACES = re.compile(r"[ \t\f\v]+")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")  # every control character except "\n"


@dataclass(frozen=True)
class CorpusSpec:
    """Everything that determines a corpus (together with the Python version)."""

    source: str = "stdlib"  # where the text comes from; only the standard library's own sources
    encoding: str = "byte"  # "byte": vocab 256, UTF-8 bytes | "char": vocab = sorted set of characters
    max_bytes: int = 1_000_000  # cap on the UTF-8 size of the text (keeps the build to a few seconds)
    val_fraction: float = 0.05  # last fraction of the tokens held out, contiguous, for validation
    ascii_only: bool = True  # drop non-ASCII characters (byte and char encodings then coincide in size)
    comments: bool = True  # include comments as well as docstrings

    def __post_init__(self) -> None:
        check_choice("source", self.source, SOURCES)
        check_choice("encoding", self.encoding, ENCODINGS)
        check_int("max_bytes", self.max_bytes, minimum=10_000, maximum=50_000_000)
        check_float("val_fraction", self.val_fraction, minimum=0.01, maximum=0.5)
        check_bool("ascii_only", self.ascii_only)
        check_bool("comments", self.comments)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> CorpusSpec:
        allowed = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - allowed)
        if unknown:
            raise ValueError(f"corpus spec has unknown field(s) {unknown}; allowed: {sorted(allowed)}")
        return cls(**d)

    def text_fields(self) -> dict:
        """The fields that determine the text (encoding and split are applied after loading it)."""
        return {k: getattr(self, k) for k in ("source", "max_bytes", "ascii_only", "comments")}

    def cache_key(self) -> str:
        """Content hash of the text-determining fields, the extraction version and the Python version."""
        return content_hash({"text": self.text_fields(), "format": FORMAT_VERSION, "python": platform.python_version()})


# ------------------------------------------------------------------------------------------------
# extraction


def stdlib_files(root: str | os.PathLike | None = None) -> list[Path]:
    """Sorted ``*.py`` files of the standard library, without tests, site-packages and caches."""
    root = Path(root if root is not None else sysconfig.get_paths()["stdlib"])
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        # pruning in place stops os.walk from descending; sorting makes nothing depend on the filesystem
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("config-"))
        for name in filenames:
            if name.endswith(".py"):
                path = Path(dirpath) / name
                found.append((path.relative_to(root).as_posix(), path))
    found.sort()
    return [p for _, p in found]


def _normalise(piece: str, ascii_only: bool) -> str:
    if ascii_only:
        piece = piece.encode("ascii", "ignore").decode("ascii")
    piece = _CONTROL.sub("", piece.replace("\r\n", "\n").replace("\r", "\n"))
    lines = (_SPACES.sub(" ", line).strip() for line in piece.split("\n"))
    return "\n".join(line for line in lines if line)


_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _scopes(tree: ast.AST):
    """Every module, class and function node, descending only through statement lists.

    Docstrings live only in those bodies, so skipping expressions gives the same nodes as
    ``ast.walk`` (lambdas have no docstrings) at a fraction of the cost.
    """
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(c for c in children if isinstance(c, ast.stmt | ast.excepthandler | ast.match_case))


def extract_pieces(source: str, *, comments: bool = True) -> list[str] | None:
    """Docstrings and comment blocks of one source file, in source order; ``None`` if it won't parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: list[tuple[int, int, str]] = []  # (line, column, text): sorting puts pieces in source order
    for node in _scopes(tree):
        doc = ast.get_docstring(node, clean=True)
        if doc and node.body:
            first = node.body[0]
            found.append((first.lineno, first.col_offset, doc))
    if comments:
        try:
            toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError):
            return None
        block: list[str] = []
        start = (0, 0)
        last_line = -2
        for tok in toks:
            if tok.type != tokenize.COMMENT:
                continue
            line, col = tok.start
            body = tok.string.lstrip("#").strip()
            if line <= 2 and (tok.string.startswith("#!") or "coding" in body):
                continue  # shebang / encoding declaration
            if block and line != last_line + 1:
                found.append((*start, "\n".join(block)))
                block = []
            if not block:
                start = (line, col)
            if body:
                block.append(body)
            last_line = line
        if block:
            found.append((*start, "\n".join(block)))
    found.sort(key=lambda t: (t[0], t[1]))
    return [text for _, _, text in found]


def _read_source(path: Path) -> str | None:
    try:
        with tokenize.open(path) as f:  # honours the file's coding declaration
            return f.read()
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None


def extract_text(spec: CorpusSpec, *, root: str | os.PathLike | None = None, progress: bool = False) -> tuple[str, int]:
    """The normalised corpus text (cut at ``spec.max_bytes`` UTF-8 bytes) and the number of files used."""
    parts: list[str] = []
    size = 0
    n_files = 0
    files = stdlib_files(root)
    for path in bar(files, desc="corpus", progress=progress, leave=False):
        source = _read_source(path)
        pieces = extract_pieces(source, comments=spec.comments) if source is not None else None
        if not pieces:
            continue
        pieces = [p for p in (_normalise(p, spec.ascii_only) for p in pieces) if p]
        if not pieces:
            continue
        chunk = "\n\n".join(pieces) + "\n\n"
        parts.append(chunk)
        n_files += 1
        size += len(chunk.encode("utf-8"))
        if size >= spec.max_bytes:
            break
    data = "".join(parts).encode("utf-8")[: spec.max_bytes]
    # a cut inside a multi-byte character is dropped rather than replaced
    return data.decode("utf-8", errors="ignore"), n_files
