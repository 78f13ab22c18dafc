"""Every profile of the registry and every golden, through the checks of tests/profile_harness.py.

A new profile is tested here by registering it and adding its golden. Its golden trees are also
compared byte for byte with what their specs compile to by tests/test_golden.py (where
`--update-golden` rewrites them), and their objects validated against their release's schema by
tests/test_kube_schema.py; both loop over every golden as this module does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import profile_harness as harness

PROFILES = harness.profile_names()
GOLDENS = harness.golden_names()


def test_the_registry_and_the_goldens_are_found() -> None:
    assert PROFILES and GOLDENS
    assert {harness.profile_of(golden) for golden in GOLDENS} <= set(PROFILES)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_profile_is_registered_under_its_own_name(profile: str) -> None:
    harness.check_registered(profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_profile_has_a_golden(profile: str) -> None:
    harness.check_has_golden(profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_starter_fails_only_on_its_placeholders(profile: str, tmp_path: Path) -> None:
    harness.check_starter(profile, tmp_path)


@pytest.mark.parametrize("profile", PROFILES)
def test_paddlegen_rules_lists_the_profiles_rules(profile: str) -> None:
    harness.check_rules_listed(profile)


@pytest.mark.parametrize("golden", GOLDENS)
def test_check_finds_the_golden_tree_up_to_date(golden: str) -> None:
    harness.check_check_is_clean(golden)


@pytest.mark.parametrize("golden", GOLDENS)
def test_the_runbook_parses_and_names_its_tree_and_target(golden: str) -> None:
    harness.check_runbook(golden)


@pytest.mark.parametrize("golden", GOLDENS)
def test_explain_describes_the_planned_job_as_text_and_json(golden: str) -> None:
    harness.check_explain(golden)


@pytest.mark.conformance
@pytest.mark.parametrize("golden", GOLDENS)
def test_the_runbook_runs_block_by_block_against_stand_ins(
        golden: str, runbook_log: Callable[[str], list[list[str]]]) -> None:
    harness.check_runbook_runs(golden, runbook_log(golden))
