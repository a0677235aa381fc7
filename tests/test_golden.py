"""scripts/golden.py: the digest a refactor's golden check compares, and the comparison."""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace

import numpy as np
import xarray as xr

from analysis.claims.ledger import Ledger
from analysis.core.paths import REPO

spec = importlib.util.spec_from_file_location("golden", REPO / "scripts" / "golden.py")
golden = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden)


def fake_result(value: float, train_time: float) -> SimpleNamespace:
    led = Ledger("toy")
    led.identity("one", measured=value, expected=1.0, atol=1e-12, source="algebra", why="exact", statement="x")
    data = xr.Dataset(
        {"v": (("n",), np.array([value, 2.0])), "train_time_s": (("n",), np.array([train_time, 1.0]))},
        coords={"n": [1, 2]},
    )
    scalars = {"slope": value, "train_time_s": train_time, "trained_from_cache": train_time > 1}
    return SimpleNamespace(data=data, scalars=scalars, meta={"x": 1, "elapsed_s": train_time}, ledger=led)


def test_digests_compare_to_the_bit_and_ignore_wall_clock(tmp_path, capsys):
    a, b = (tmp_path / f"{n}.json" for n in "ab")
    a.write_text(json.dumps(golden.digest(fake_result(1.0, 0.5))))
    b.write_text(json.dumps(golden.digest(fake_result(1.0, 7.0))))  # only wall-clock entries differ
    assert golden.main(["compare", str(a), str(b)]) == 0
    assert capsys.readouterr().out.strip() == "identical"
    b.write_text(json.dumps(golden.digest(fake_result(1.0 + 2**-52, 0.5))))  # one ulp
    assert golden.main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "/arrays/v/sha256" in out and "/scalars/slope" in out and "/claims[0]/measured" in out
    assert "3 differences" in out
    assert golden.main(["nope"]) == 2
