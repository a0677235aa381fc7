"""A small natural-text corpus built at run time from text already on every machine.

The text is the English prose of the Python standard library: its docstrings (read with ``ast``) and
its comments (read with ``tokenize``). Nothing is downloaded, and the same interpreter always yields
the same bytes, so the corpus is deterministic:

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
the cache key contains the Python version, and every corpus carries the SHA-256 of its text: a model
trained on a different text never silently shares a cache entry with this one.

Two encodings are offered: ``"byte"`` (vocabulary 256, token = UTF-8 byte) and ``"char"`` (vocabulary =
the sorted set of characters in the text, token = index in that sorted list). The last
``val_fraction`` of the tokens is a contiguous validation split.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import json
import math
import os
import platform
import re
import shutil
import sysconfig
import tempfile
import time
import tokenize
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.core.io import atomic_replace_dir, content_hash, entry_lock, sha256_bytes, sha256_file, touch
from analysis.core.paths import cache_dir
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


@dataclass(frozen=True, eq=False)
class Corpus:
    """A built corpus: its text, its tokens and how they map to characters."""

    spec: CorpusSpec  # what was asked for
    text: str  # the normalised text
    tokens: np.ndarray  # (n_tokens,) uint8 when the vocabulary fits in a byte, else int32
    vocab: tuple[str, ...]  # token id -> string: chr(b) for b < 256 (byte), sorted characters (char)
    sha256: str  # SHA-256 of the UTF-8 text: the corpus's identity
    n_files: int  # number of source files that contributed text
    python_version: str  # interpreter whose standard library was read
    from_cache: bool = False  # True when loaded from the on-disk cache rather than built
    stoi: dict[str, int] = field(default_factory=dict, repr=False)  # char -> id (char encoding only)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def n_tokens(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def n_val(self) -> int:
        """Size of the validation split: the last ``ceil(val_fraction * n_tokens)`` tokens."""
        return int(math.ceil(self.spec.val_fraction * self.n_tokens))

    @property
    def train_tokens(self) -> np.ndarray:
        return self.tokens[: self.n_tokens - self.n_val]

    @property
    def val_tokens(self) -> np.ndarray:
        return self.tokens[self.n_tokens - self.n_val :]

    def encode(self, text: str) -> np.ndarray:
        if self.spec.encoding == "byte":
            return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()
        try:
            ids = [self.stoi[c] for c in text]
        except KeyError as err:
            raise ValueError(f"text contains a character outside the corpus vocabulary: {err}") from None
        return np.asarray(ids, dtype=self.tokens.dtype)

    def decode(self, tokens) -> str:
        ids = np.asarray(tokens).astype(np.int64).ravel()
        if self.spec.encoding == "byte":
            return bytes(ids.astype(np.uint8).tolist()).decode("utf-8", errors="replace")
        return "".join(self.vocab[i] for i in ids)

    def summary(self) -> dict:
        """JSON-safe facts about the corpus (sizes, hash, unigram entropy in nats)."""
        return {
            "spec": self.spec.to_dict(),
            "sha256": self.sha256,
            "n_files": self.n_files,
            "n_tokens": self.n_tokens,
            "n_train": self.n_tokens - self.n_val,
            "n_val": self.n_val,
            "vocab_size": self.vocab_size,
            "python_version": self.python_version,
            "unigram_entropy_nats": unigram_entropy(self.tokens),
        }


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


# ------------------------------------------------------------------------------------------------
# encodings, entropy


def _tokenise(text: str, encoding: str) -> tuple[np.ndarray, tuple[str, ...], dict[str, int]]:
    if encoding == "byte":
        tokens = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()
        return tokens, tuple(chr(b) for b in range(256)), {}
    vocab = tuple(sorted(set(text)))
    stoi = {c: i for i, c in enumerate(vocab)}
    dtype = np.uint8 if len(vocab) <= 256 else np.int32
    if all(ord(c) < 256 for c in vocab):
        # vectorised path: a 256-entry lookup table from code point to id
        table = np.zeros(256, dtype=dtype)
        for c, i in stoi.items():
            table[ord(c)] = i
        tokens = table[np.frombuffer(text.encode("latin-1"), dtype=np.uint8)]
    else:
        tokens = np.fromiter((stoi[c] for c in text), dtype=dtype, count=len(text))
    return tokens, vocab, stoi


def unigram_entropy(tokens) -> float:
    """Entropy of the empirical unigram distribution, in nats: ``-sum_v p_v ln p_v`` (float64).

    This is the cross-entropy a model that ignores context would reach on the same text, so it is
    the natural "no learning beyond frequencies" reference line for a language-model loss curve.
    """
    arr = np.asarray(tokens).astype(np.int64).ravel()
    if arr.size == 0:
        raise ValueError("tokens must not be empty")
    counts = np.bincount(arr).astype(np.float64)
    p = counts[counts > 0] / arr.size
    return float(-(p * np.log(p)).sum())


def bigram_cross_entropy(train_tokens, val_tokens, vocab_size: int, prior: float = 0.5) -> float:
    """Held-out cross-entropy (nats per token) of the bigram model fitted on ``train_tokens``.

    ``p(b | a) = (n_ab + prior) / (n_a + V prior)`` from the train split's transition counts (the
    Krichevsky-Trofimov estimator at ``prior = 0.5``), scored on every transition of ``val_tokens``
    (float64). It is the loss of the best model that sees one token of context, estimated without
    looking at the held-out text: a language model whose held-out loss is below it uses more context.
    """
    tr = np.asarray(train_tokens).astype(np.int64).ravel()
    va = np.asarray(val_tokens).astype(np.int64).ravel()
    if tr.size < 2 or va.size < 2:
        raise ValueError("train_tokens and val_tokens need at least 2 tokens each")
    if not prior > 0:
        raise ValueError(f"prior must be > 0, got {prior}")
    if max(tr.max(), va.max()) >= vocab_size or min(tr.min(), va.min()) < 0:
        raise ValueError(f"token ids must lie in [0, vocab_size = {vocab_size})")
    counts = np.zeros((vocab_size, vocab_size), dtype=np.float64)
    np.add.at(counts, (tr[:-1], tr[1:]), 1.0)
    row = counts.sum(axis=1)
    p = (counts[va[:-1], va[1:]] + prior) / (row[va[:-1]] + vocab_size * prior)
    return float(-np.log(p).mean())


# ------------------------------------------------------------------------------------------------
# build + cache


def corpus_dir(spec: CorpusSpec) -> Path:
    return cache_dir() / "corpus" / spec.cache_key()


def _make(spec: CorpusSpec, text: str, n_files: int, python_version: str, from_cache: bool) -> Corpus:
    tokens, vocab, stoi = _tokenise(text, spec.encoding)
    if tokens.size < 1000:
        raise ValueError(f"corpus too small ({tokens.size} tokens); raise max_bytes")
    return Corpus(
        spec=spec,
        text=text,
        tokens=tokens,
        vocab=vocab,
        sha256=sha256_bytes(text.encode("utf-8")),
        n_files=n_files,
        python_version=python_version,
        from_cache=from_cache,
        stoi=stoi,
    )


def _load(spec: CorpusSpec, folder: Path) -> Corpus | None:
    """The cached corpus, or ``None`` (with a warning when something is there but wrong)."""
    bin_path, meta_path = folder / "corpus.bin", folder / "meta.json"
    if not (bin_path.is_file() and meta_path.is_file()):
        return None
    try:
        meta = json.loads(meta_path.read_text())
        ok = meta["text"] == spec.text_fields() and sha256_file(bin_path) == meta["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        warnings.warn(f"corpus cache at {folder} is corrupt or stale; rebuilding", stacklevel=3)
        return None
    text = bin_path.read_bytes().decode("utf-8")
    touch(folder)  # its last use, for `python -m probes cache prune --older-than`
    return _make(spec, text, int(meta["n_files"]), str(meta["python_version"]), from_cache=True)


def _store(corpus: Corpus, folder: Path, build_seconds: float) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        data = corpus.text.encode("utf-8")
        (tmp / "corpus.bin").write_bytes(data)
        meta = {
            "text": corpus.spec.text_fields(),
            "sha256": corpus.sha256,
            "n_bytes": len(data),
            "n_files": corpus.n_files,
            "python_version": corpus.python_version,
            "format": FORMAT_VERSION,
            "build_seconds": round(build_seconds, 3),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        for name in ("corpus.bin", "meta.json"):
            with open(tmp / name, "rb") as f:
                os.fsync(f.fileno())
        atomic_replace_dir(tmp, folder)  # readers see the old folder or the new one, never a mix
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def build_corpus(
    spec: CorpusSpec | None = None,
    *,
    use_cache: bool = True,
    progress: bool = False,
    root: str | os.PathLike | None = None,
) -> Corpus:
    """Build (or load from ``cache_dir()/corpus/<key>/``) the corpus described by ``spec``.

    The cache holds ``corpus.bin`` (the UTF-8 text) and ``meta.json`` (the text-determining fields,
    SHA-256, file count, build time); byte and char encodings of the same text share one entry.
    A cached text whose SHA-256 does not match its metadata is reported with a warning and rebuilt.
    ``root`` replaces the standard-library folder (tests use it); a custom root is never cached.
    """
    spec = spec if spec is not None else CorpusSpec()
    if not isinstance(spec, CorpusSpec):
        raise ValueError(f"spec must be a CorpusSpec, got {type(spec).__name__}")
    cacheable = use_cache and root is None
    folder = corpus_dir(spec)
    if cacheable:
        cached = _load(spec, folder)
        if cached is not None:
            return cached
    t0 = time.perf_counter()
    text, n_files = extract_text(spec, root=root, progress=progress)
    corpus = _make(spec, text, n_files, platform.python_version(), from_cache=False)
    if cacheable:
        try:
            with entry_lock(folder):  # `python -m probes cache prune` leaves a corpus being written alone
                _store(corpus, folder, time.perf_counter() - t0)
        except OSError as err:  # e.g. a read-only cache, or another process replaced the folder meanwhile
            warnings.warn(f"could not cache the corpus at {folder}: {err}", stacklevel=2)
    return corpus
