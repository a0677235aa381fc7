"""Tests for analysis/data/corpus.py: extraction rules, determinism, encodings, the cache and its integrity."""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections import Counter

import numpy as np
import pytest

from analysis.core.io import sha256_file
from analysis.data.corpus import (
    CorpusSpec,
    bigram_cross_entropy,
    build_corpus,
    corpus_dir,
    extract_pieces,
    stdlib_files,
    unigram_entropy,
)

SMALL = 40_000  # bytes: a handful of stdlib files, built in a fraction of a second


@pytest.fixture(scope="module")
def built():
    """One uncached build shared by the read-only tests."""
    return build_corpus(CorpusSpec(max_bytes=SMALL), use_cache=False)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))


def test_build_is_deterministic_and_hashed(built):
    a = built
    b = build_corpus(CorpusSpec(max_bytes=SMALL), use_cache=False)
    assert a.sha256 == b.sha256 and a.text == b.text and a.n_files == b.n_files > 0
    assert a.sha256 == hashlib.sha256(a.text.encode("utf-8")).hexdigest()
    assert 0.9 * SMALL <= len(a.text.encode()) <= SMALL  # cut at the cap (the stdlib is much larger)
    assert not a.from_cache


def test_text_is_normalised_ascii(built):
    c = built
    assert c.text.isascii()
    assert "\t" not in c.text and "\r" not in c.text and "  " not in c.text
    assert "\n\n\n" not in c.text
    assert all(ch == "\n" or ch.isprintable() for ch in set(c.text))


def test_split_is_contiguous_tail(built):
    c = built
    assert c.n_val == math.ceil(0.05 * c.n_tokens)
    np.testing.assert_array_equal(np.concatenate([c.train_tokens, c.val_tokens]), c.tokens)
    np.testing.assert_array_equal(c.val_tokens, c.tokens[-c.n_val :])


def test_byte_and_char_encodings(built):
    byte = built
    char = build_corpus(CorpusSpec(max_bytes=SMALL, encoding="char"), use_cache=False)
    assert byte.sha256 == char.sha256  # same text, different tokens
    assert byte.vocab_size == 256 and byte.tokens.dtype == np.uint8
    np.testing.assert_array_equal(byte.tokens, np.frombuffer(byte.text.encode(), dtype=np.uint8))
    assert list(char.vocab) == sorted(set(char.text))  # explicit, sorted mapping id -> char
    assert char.stoi == {ch: i for i, ch in enumerate(char.vocab)}
    assert int(char.tokens.max()) < char.vocab_size
    assert char.decode(char.tokens) == char.text
    assert byte.decode(byte.tokens) == byte.text
    np.testing.assert_array_equal(char.encode(char.text[:500]), char.tokens[:500])
    # ASCII text: char ids are an order-preserving relabelling of the bytes
    lut = np.full(256, -1)
    lut[[ord(ch) for ch in char.vocab]] = np.arange(char.vocab_size)
    np.testing.assert_array_equal(lut[byte.tokens], char.tokens)
    with pytest.raises(ValueError, match="vocabulary"):
        char.encode("\u00e9")


def test_cache_round_trip_and_shared_by_encodings():
    spec = CorpusSpec(max_bytes=SMALL)
    first = build_corpus(spec)
    assert not first.from_cache
    folder = corpus_dir(spec)
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["sha256"] == first.sha256 == sha256_file(folder / "corpus.bin")
    second = build_corpus(spec)
    assert second.from_cache and second.sha256 == first.sha256
    np.testing.assert_array_equal(second.tokens, first.tokens)
    char = build_corpus(CorpusSpec(max_bytes=SMALL, encoding="char"))
    assert char.from_cache and corpus_dir(char.spec) == folder
    assert corpus_dir(CorpusSpec(max_bytes=SMALL + 1)) != folder


def test_corrupt_cache_is_detected_and_rebuilt():
    spec = CorpusSpec(max_bytes=SMALL)
    good = build_corpus(spec)
    path = corpus_dir(spec) / "corpus.bin"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # flip one bit: same size, different hash
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="corrupt"):
        again = build_corpus(spec)
    assert not again.from_cache and again.sha256 == good.sha256
    assert sha256_file(path) == good.sha256  # the cache was rewritten
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert build_corpus(spec).from_cache
    # truncated metadata is handled the same way
    (corpus_dir(spec) / "meta.json").write_text("{not json")
    with pytest.warns(UserWarning, match="corrupt"):
        assert build_corpus(spec).sha256 == good.sha256


def test_unigram_entropy_closed_forms_and_corpus(built):
    assert unigram_entropy([0, 1, 2, 3] * 5) == pytest.approx(math.log(4), abs=1e-15)
    assert unigram_entropy(np.full(10, 7, dtype=np.uint8)) == 0.0
    p = np.array([0.5, 0.25, 0.25])
    assert unigram_entropy([0, 0, 1, 2]) == pytest.approx(-(p * np.log(p)).sum(), abs=1e-15)
    with pytest.raises(ValueError, match="tokens"):
        unigram_entropy([])
    c = built
    counts = Counter(c.text)
    n = len(c.text)
    expected = -sum(k / n * math.log(k / n) for k in counts.values())
    h = c.summary()["unigram_entropy_nats"]
    assert h == pytest.approx(expected, rel=1e-12)
    assert 0 < h < math.log(len(counts))  # English text is far from uniform over its characters


def test_bigram_cross_entropy_by_hand_and_on_the_corpus(built):
    # train 0 1 0 1 0: counts n_01 = 2, n_10 = 2; V = 3, prior 1/2: p(1|0) = (2 + .5)/(2 + 1.5) = 5/7,
    # p(2|1) = (0 + .5)/(2 + 1.5) = 1/7; val 0 1 2 scores both
    h = bigram_cross_entropy([0, 1, 0, 1, 0], [0, 1, 2], vocab_size=3)
    assert h == pytest.approx(-(math.log(5 / 7) + math.log(1 / 7)) / 2, abs=1e-15)
    # a never-seen context gives the uniform prediction ln V
    assert bigram_cross_entropy([0, 0], [2, 1], vocab_size=4) == pytest.approx(math.log(4), abs=1e-15)
    for bad, match in (([5, 1], "vocab_size"), ([1], "at least 2")):
        with pytest.raises(ValueError, match=match):
            bigram_cross_entropy(bad, [0, 1], vocab_size=3)
    with pytest.raises(ValueError, match="prior"):
        bigram_cross_entropy([0, 1], [0, 1], vocab_size=3, prior=0.0)
    c = built  # one character of context beats none on English text and code
    V = int(max(c.tokens.max(), 1)) + 1
    assert bigram_cross_entropy(c.train_tokens, c.val_tokens, V) < unigram_entropy(c.val_tokens)


def test_extract_pieces_order_and_rules():
    source = '''#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Module doc."""

# first comment
# continues here
def f():
    """Function doc."""
    x = 1  # trailing comment
    return x

class C:
    """Class doc."""
'''
    assert extract_pieces(source) == [
        "Module doc.",
        "first comment\ncontinues here",
        "Function doc.",
        "trailing comment",
        "Class doc.",
    ]
    assert extract_pieces(source, comments=False) == ["Module doc.", "Function doc.", "Class doc."]
    assert extract_pieces("def broken(:\n") is None


def test_file_walk_skips_tests_and_bad_files(tmp_path):
    root = tmp_path / "lib"
    for rel, text in {
        "b.py": '"""Bee module."""\n',
        "a.py": '"""Ay module."""\n# a comment\n',
        "pkg/c.py": '"""See module."""\n',
        "test/t.py": '"""Test module."""\n',
        "pkg/tests/t.py": '"""Nested test."""\n',
        "site-packages/x.py": '"""Third party."""\n',
        "bad.py": "def broken(:\n",
        "notes.txt": "not python",
    }.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    files = [p.relative_to(root).as_posix() for p in stdlib_files(root)]
    assert files == ["a.py", "b.py", "bad.py", "pkg/c.py"]
    pad = "x" * 2000  # the builder refuses a corpus under 1000 tokens, so pad one file
    (root / "pkg" / "c.py").write_text(f'"""See module. {pad}"""\n')
    c = build_corpus(CorpusSpec(max_bytes=10_000), root=root)
    assert c.text.startswith("Ay module.\n\na comment\n\nBee module.\n\nSee module.")
    assert c.n_files == 3  # bad.py fails to parse and is skipped
    assert not (corpus_dir(c.spec)).exists()  # a custom root is never cached


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(source="web"), "source"),
        (dict(encoding="bpe"), "encoding"),
        (dict(max_bytes=10), "max_bytes"),
        (dict(val_fraction=0.0), "val_fraction"),
        (dict(val_fraction=0.9), "val_fraction"),
        (dict(ascii_only=1), "ascii_only"),
        (dict(comments="yes"), "comments"),
    ],
)
def test_spec_validation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CorpusSpec(**kwargs)
    with pytest.raises(ValueError, match="spec"):
        build_corpus("stdlib")
