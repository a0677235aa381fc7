"""The declared claims (probes.declared, python -m probes claims NAME --declared): read from the source."""

from __future__ import annotations

import json
import textwrap

import pytest

from analysis.ledger import ROLES
from probes import declared, inventory
from probes.cli import main

PROBES_WITH_CLAIMS = sorted({c["probe"] for c in inventory.committed_claims()})


@pytest.mark.parametrize("probe", PROBES_WITH_CLAIMS)
def test_every_committed_claim_has_a_declared_site_of_its_role(probe):
    sites = declared.declared_sites(probe)
    assert sites
    for site in sites:  # every call resolves: a name (or template) and a role
        assert site.names and site.role in ROLES, site
    missing = [
        (c["name"], c["role"])
        for c in inventory.committed_claims()
        if c["probe"] == probe and not declared.match(sites, c["name"], c["role"])
    ]
    assert not missing, f"committed claims no call in {probe}'s source makes: {missing}"


SCRATCH = """
from probes.icl_gd.eta_star import SOURCE_ETA as IMPORTED

SOURCE = "derivation: a scratch closed form"
PART_NAME = "scratch"


def measure(ctx):
    pass


def claims(led, results):
    led.identity("literal_name", measured=1.0, expected=1.0, atol=0.0, source=SOURCE, why="x", statement="one")
    for width in ("8", "16"):
        led.predict(f"width_{width}_law", measured=1.0, expected=1.0, alternative=0.0, source=IMPORTED, why="x",
                    hypothesis="h", statement=f"width {width}: the law at {2 * int(width)}", seed="000#1")
    name, src = "paired_name", "paired source"
    led.bound(name, measured=1.0, bound=2.0, relation="<=", source=src, why="x", statement="s")
    for label, kind in (("a", "x"), ("b", "y")):
        led.direction(f"{label}_rises", replicates=[1.0], sign=1, alternative=0.0, source=SOURCE, why="x",
                      hypothesis="h", statement="s")
    common = dict(source=SOURCE, seed="000#2")
    led.paper("from_common", measured=1.0, expected=1.0, why="x", statement="s", **common)
    helper(led, "from_caller", 3)
    led.identity(compute_name(), measured=1.0, expected=1.0, atol=0.0, source=SOURCE, why="x", statement="s")


def helper(led, claim, n):
    names = [claim] + ([f"{claim}_twice"] if n > 1 else [])
    led.not_evaluated(names[0], role="prediction", source=SOURCE, reason="r")
    led.not_evaluated(names[1], role="bound", source=SOURCE, reason="r")


def compute_name():
    return "runtime"
"""


def test_names_are_followed_to_their_values(tmp_path):
    path = tmp_path / "scratch.py"
    path.write_text(textwrap.dedent(SCRATCH))
    sites = declared.declared_sites("scratch", [path])
    by_line = [(s.method, s.names, s.role) for s in sites]
    assert by_line == [
        ("identity", ("literal_name",), "identity"),
        ("predict", ("width_8_law", "width_16_law"), "prediction"),  # a loop over a literal tuple fills the field
        ("bound", ("paired_name",), "bound"),  # a tuple assignment
        ("direction", ("a_rises", "b_rises"), "prediction"),  # a loop over rows, unpacked
        ("paper", ("from_common",), "paper"),
        ("identity", (), "identity"),  # a name computed by a call: not guessed
        ("not_evaluated", ("from_caller",), "prediction"),  # a parameter: the callers' arguments
        ("not_evaluated", ("from_caller_twice",), "bound"),
    ]
    first, second = sites[0], sites[1]
    assert first.source == "derivation: a scratch closed form" and first.part == "scratch"
    assert first.function == "claims" and first.statement == "one"
    from probes.icl_gd.eta_star import SOURCE_ETA

    assert second.source == SOURCE_ETA and second.seed == "000#1"  # a constant imported from a probes module
    assert second.statement == "width 8: the law at {2 * int(width)} | width 16: the law at {2 * int(width)}"
    assert sites[4].seed == "000#2" and sites[4].source == first.source  # keywords passed as **common
    assert declared.match(sites, "width_16_law", "prediction") == [second]
    assert declared.match(sites, "width_16_law", "identity") == [] and declared.match(sites, "width_32_law") == []
    text = declared.format_sites(sites, source=True)
    assert "identity   literal_name  (" in text and "part scratch; seed" not in text.split("\n")[0]
    assert "(name computed at run time)" in text and "source: paired source" in text


def test_an_f_string_field_naming_a_string_is_filled_and_templates_match_any_value(tmp_path):
    path = tmp_path / "templ.py"
    path.write_text(
        textwrap.dedent("""
        def claims(led, results, depth):
            base = "relay_alpha"
            led.predict(f"{base}_L{depth}", measured=1.0, expected=1.0, alternative=0.0, source="s", why="x",
                        hypothesis="h", statement="s")
        """)
    )
    (site,) = declared.declared_sites("templ", [path])
    assert site.names == ("relay_alpha_L{depth}",)
    assert declared.match([site], "relay_alpha_L6") and declared.match([site], "relay_alpha_L")
    assert not declared.match([site], "relay_beta_L6") and not declared.match([site], "x_relay_alpha_L6")


def test_command_line(capsys, tmp_path):
    assert main(["claims", "icl_gd", "--declared", "--role", "prediction", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["role"] == "prediction" and r["module"].startswith("probes/icl_gd/") for r in rows)
    assert any("depth_matches_gdpp" in r["names"] for r in rows)
    assert main(["claims", "representational_collapse", "--declared", "--source"]) == 0
    out = capsys.readouterr().out
    assert "probes/representational_collapse/distances.py:" in out and "source: " in out
    for argv, msg in (
        (["claims", "nope", "--declared"], "probe must be one whose source declares claims"),
        (["claims", "--declared"], "--declared needs a probe name"),
        (["claims", "icl_gd", "--declared", "--status", "pass"], "--declared needs a probe name and takes no"),
        (["claims", "icl_gd", "--declared", "--role", "guess"], "--role must be one of identity"),
    ):
        assert main(argv) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert msg in line, line


HELPER_SCRATCH = """
from probes.parts import Measured, predict_law_and_slope

SOURCE = "derivation: a scratch law"


def claims(led, results):
    values = [1.0, 2.0]
    law = ("scratch_law", 0.0, "h", f"{SOURCE}, section 1")
    slope = ("scratch_slope", 1.0, "h", f"{SOURCE}, section 1: slope")
    what = Measured(f"a scratch layer of width {len(values)}", "n", "share")
    predict_law_and_slope(led, (values, values), values, law, slope, what, seed="000#3", figure="f")
    predict_law_and_slope(
        led, (values, values), values, law, slope, Measured("inline", "n", "share", slope_quantity="relative share")
    )
"""


def test_a_shared_helper_declares_one_site_per_claim_spec(tmp_path):
    """predict_law_and_slope(led, pairs, xs, law, slope, what, ...) makes two predictions: their names, sources and
    the seed come from the specs, the statement's template from the Measured words (assigned or inline; the slope's
    quantity where given) and the helper's own sentence."""
    path = tmp_path / "scratch_helper.py"
    path.write_text(textwrap.dedent(HELPER_SCRATCH))
    sites = declared.declared_sites("scratch", [path])
    assert [(s.method, s.names, s.role, s.seed) for s in sites] == [
        ("predict_law_and_slope", ("scratch_law",), "prediction", "000#3"),
        ("predict_law_and_slope", ("scratch_slope",), "prediction", "000#3"),
        ("predict_law_and_slope", ("scratch_law",), "prediction", None),
        ("predict_law_and_slope", ("scratch_slope",), "prediction", None),
    ]
    assert sites[0].source == "derivation: a scratch law, section 1"
    assert sites[0].statement == "a scratch layer of width {len(values)}: the mean share is its exact law"
    assert sites[1].statement == "a scratch layer of width {len(values)}: ln(mean share)'s slope in ln n is its law's"
    assert sites[3].statement == "inline: ln(mean relative share)'s slope in ln n is its law's"


GIVEN_SCRATCH = """
SOURCE = "derivation: a scratch given"


def claims(led, results):
    led = led.given(seed="000#4", source=SOURCE, figure="f")
    led.identity("given_identity", measured=1.0, expected=1.0, why="x", statement="s")
    led.predict("given_but_own_seed", measured=1.0, expected=1.0, alternative=0.0, hypothesis="h", why="x",
                statement="s", seed="000#5")


def other(led, results):
    led.identity("no_given", measured=1.0, expected=1.0, source="elsewhere", why="x", statement="s")
"""


def test_a_claim_function_s_given_defaults_are_its_calls_keywords(tmp_path):
    """led = led.given(seed=..., source=...) at the top of a claim function: its calls that leave out a keyword
    declare the given one, a keyword written in the call wins, and another function is not affected."""
    path = tmp_path / "scratch_given.py"
    path.write_text(textwrap.dedent(GIVEN_SCRATCH))
    sites = declared.declared_sites("scratch", [path])
    assert [(s.names, s.seed, s.source) for s in sites] == [
        (("given_identity",), "000#4", "derivation: a scratch given"),
        (("given_but_own_seed",), "000#5", "derivation: a scratch given"),
        (("no_given",), None, "elsewhere"),
    ]
