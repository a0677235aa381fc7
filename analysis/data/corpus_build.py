"""Building a corpus and caching it: :class:`Corpus` (the text, its tokens and how they map to characters), the
two encodings, and :func:`build_corpus`, which builds the text of a :class:`analysis.data.corpus_text.CorpusSpec`
or loads it from ``cache_dir()/corpus/<key>/``.

Two encodings are offered: ``"byte"`` (vocabulary 256, token = UTF-8 byte) and ``"char"`` (vocabulary =
the sorted set of characters in the text, token = index in that sorted list). The last
``val_fraction`` of the tokens is a contiguous validation split. Every corpus carries the SHA-256 of its text:
a model trained on a different text never silently shares a cache entry with this one.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from analysis.core.io import atomic_replace_dir, entry_lock, sha256_bytes, sha256_file, touch
from analysis.core.paths import cache_dir
from analysis.data.corpus_stats import unigram_entropy
from analysis.data.corpus_text import FORMAT_VERSION, CorpusSpec, extract_text


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
# encodings


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
