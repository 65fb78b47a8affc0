"""`make study` asks for the emulated sites' packages only when the study names one."""

from __future__ import annotations

import pytest
from instore.needs import EMULATED, main, needs


def test_the_default_study_needs_the_emulated_sites_packages() -> None:
    assert needs(["profile=quick"]) == [EMULATED]


def test_a_real_site_alone_needs_no_emulation_package() -> None:
    assert needs(["profile=quick", "sites=[example-real]"]) == []


def test_a_real_and_an_emulated_site_need_the_emulated_packages() -> None:
    assert needs(["profile=quick", "sites=[example-real,wan]"]) == [EMULATED]


def test_a_configuration_snakemake_refuses_is_left_to_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["profile=quick", "sites=[no-such-site]"]) == 0
    assert capsys.readouterr().out == ""
