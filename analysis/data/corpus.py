"""A small natural-text corpus built at run time from text already on every machine.

The text is the English prose of the Python standard library (its docstrings and comments); nothing is downloaded,
and the same interpreter always yields the same bytes. Which files, which pieces and how they are normalised is
written in :mod:`analysis.data.corpus_text`. The result depends on the interpreter's version, so the cache key
contains the Python version, and every corpus carries the SHA-256 of its text: a model trained on a different text
never silently shares a cache entry with this one.

Two encodings are offered: ``"byte"`` (vocabulary 256, token = UTF-8 byte) and ``"char"`` (vocabulary =
the sorted set of characters in the text, token = index in that sorted list). The last
``val_fraction`` of the tokens is a contiguous validation split.

Where it lives: the spec and the extraction in :mod:`analysis.data.corpus_text`, the built corpus, its encodings
and its cache in :mod:`analysis.data.corpus_build`, the entropies a loss is read against in
:mod:`analysis.data.corpus_stats`; this module re-exports them.
"""

from __future__ import annotations

from analysis.data.corpus_build import Corpus, _load, _make, _store, _tokenise, build_corpus, corpus_dir  # noqa: F401
from analysis.data.corpus_stats import bigram_cross_entropy, unigram_entropy  # noqa: F401
from analysis.data.corpus_text import (  # noqa: F401
    _CONTROL,
    _SCOPES,
    _SPACES,
    ENCODINGS,
    FORMAT_VERSION,
    SKIP_DIRS,
    SOURCES,
    CorpusSpec,
    _normalise,
    _read_source,
    _scopes,
    extract_pieces,
    extract_text,
    stdlib_files,
)
