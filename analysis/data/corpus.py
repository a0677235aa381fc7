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
