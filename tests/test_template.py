"""The runbooks' templates (compiler/template.py): a missing value is an error, values reach a
shell through the `q` filter, each template is compiled once per process, and only a command
that writes a runbook imports Jinja2."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest

from paddlegen.compiler import template
from paddlegen.compiler.build import build
from paddlegen.profiles import PROFILES

from conftest import GOLDEN, GOLDEN_SPECS, ROOT, run_cli_process
from profile_harness import goldens_of, profile_names, spec_of

# Every profile's runbook is a template (profiles/<name>.md.j2, beside the module).
TEMPLATED = profile_names()


def pending_spec(tmp_path: Path) -> Path:
    """The kube-aws golden before AWS has made its KMS key and file system."""
    lines = (GOLDEN / "kube-aws" / "spec.yaml").read_text().splitlines(keepends=True)
    spec = tmp_path / "spec.yaml"
    spec.write_text("".join(line for line in lines if not line.lstrip().startswith(
        ("kmsKeyArn:", "dnsName:", "efs:"))))
    return spec


def captured(spec: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, dict[str, Any]]:
    """The package, template name and context with which the spec's profile renders its
    runbook, and the check that rendering them gives the runbook its build wrote."""
    calls: list[tuple[str, str, dict[str, Any]]] = []
    render = template.render

    def recording(package: str, name: str, context: dict[str, Any]) -> str:
        calls.append((package, name, dict(context)))
        return render(package, name, context)

    raw = spec.read_bytes()
    profile = build(raw, str(spec)).profile
    module = sys.modules[profile.runbook.__module__]
    monkeypatch.setattr(template, "render", recording)  # a module that imports it when it writes
    if hasattr(module, "render"):  # one that imported it with itself
        monkeypatch.setattr(module, "render", recording)
    runbook = next(a.text for a in build(raw, str(spec)).artifacts if a.path == "RUNBOOK.md")
    monkeypatch.undo()
    [(package, name, context)] = calls
    assert template.render(package, name, context) == runbook
    return package, name, context


# Runbooks of a profile that none of its goldens writes: a golden with one edit each.
VARIANTS = {"kubernetes": [
    ("kubernetes", "  launcher: indexed\n", "  launcher: kubeflow\n"),  # the training operator
    ("kubernetes", "  storageClassName: nfs-rwx\n  request: 20Gi\n",  # a claim that exists
     "  existingClaim: shared\n")]}


def specs_of(profile: str, tmp_path: Path) -> list[Path]:
    """The goldens of a profile, its VARIANTS, and for kube-aws its spec before AWS has made its
    values."""
    specs = [spec_of(golden) for golden in goldens_of(profile)]
    for number, (golden, old, new) in enumerate(VARIANTS.get(profile, [])):
        text = spec_of(golden).read_text()
        assert old in text, (golden, old)
        specs.append(tmp_path / f"variant-{number}.yaml")
        specs[-1].write_text(text.replace(old, new))
    return specs + ([pending_spec(tmp_path)] if profile == "kube-aws" else [])


def raises_undefined(package: str, name: str, context: dict[str, Any]) -> bool:
    try:
        template.render(package, name, context)
    except jinja2.UndefinedError:
        return True
    return False


@pytest.mark.parametrize("profile", TEMPLATED)
def test_every_name_the_context_lacks_is_an_error(profile: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Each name of the context is one some runbook of the profile needs (a name that only
    reaches a helper that does not use it, such as the network plugins on a release without
    NetworkPolicies, is needed by another golden), and without it no text comes out."""
    renders = [captured(spec, monkeypatch) for spec in specs_of(profile, tmp_path)]
    keys = {key for _, _, context in renders for key in context}
    for key in sorted(keys):
        assert any(raises_undefined(package, name, {k: v for k, v in context.items() if k != key})
                   for package, name, context in renders), key


def test_the_pending_runbook_holds_steps_0_to_3(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    package, name, context = captured(pending_spec(tmp_path), monkeypatch)
    runbook = template.render(package, name, context)
    assert "go on at step 4 of the rebuilt RUNBOOK.md" in runbook
    assert "## 3. " in runbook and "## 4. " not in runbook


def test_an_attribute_the_plan_lacks_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    package, name, context = captured(GOLDEN / "local" / "spec.yaml", monkeypatch)

    @dataclasses.dataclass(frozen=True)
    class Partial:
        meta: Any  # the rest of the plan is missing

    with pytest.raises(jinja2.UndefinedError, match="image"):
        template.render(package, name, {**context, "plan": Partial(context["plan"].meta)})


def test_a_value_that_is_none_is_an_error_not_text(monkeypatch: pytest.MonkeyPatch) -> None:
    package, name, context = captured(GOLDEN / "kube-up" / "spec.yaml", monkeypatch)
    plan = context["plan"]
    # quoted: the region in every block's preamble
    no_region = plan.cluster.model_copy(update={"region": None})
    with pytest.raises(jinja2.UndefinedError, match="None"):
        template.render(package, name, {**context, "plan": dataclasses.replace(
            plan, cluster=no_region)})
    # printed as it is: the zone in step 2's title
    no_zone = plan.cluster.model_copy(update={"availability_zone": None})
    with pytest.raises(jinja2.UndefinedError, match="None"):
        template.render(package, name, {**context, "plan": dataclasses.replace(
            plan, cluster=no_zone)})


@pytest.mark.parametrize(("value", "word"), [
    ("paddle-cluster", "paddle-cluster"), ("my key", "'my key'"), ("it's", "'it'\"'\"'s'"),
    ("$HOME", "'$HOME'"), ("", "''"), (3, "3"), (-1, "-1")])
def test_q_quotes_a_value_as_one_shell_word(value: str | int, word: str) -> None:
    assert template.quote(value) == word
    printed = subprocess.run(["sh", "-c", f"printf %s {word}"], capture_output=True,
                             text=True, check=True).stdout
    assert printed == str(value)


def test_q_refuses_what_has_no_one_spelling() -> None:
    with pytest.raises(jinja2.UndefinedError):
        template.quote(None)
    for value in (True, 1.5, ["a"]):
        with pytest.raises(TypeError):
            template.quote(value)
    with pytest.raises(jinja2.UndefinedError, match="'missing' is undefined"):
        template.quote(jinja2.StrictUndefined(name="missing"))


def test_the_templates_quote_only_through_q() -> None:
    for path in sorted((ROOT / "profiles").glob(f"*{template.SUFFIX}")):
        text = path.read_text()
        for by_hand in ("shlex", "quote("):
            assert by_hand not in text, (path.name, by_hand)


def test_every_templated_profile_has_its_template_beside_it() -> None:
    for profile in TEMPLATED:
        module = PROFILES[profile].runbook.__module__
        package, _, _ = module.rpartition(".")
        assert (ROOT / "profiles" / f"{profile}{template.SUFFIX}").is_file()
        assert package == "paddlegen.profiles"
    # package data: an installed paddlegen has them (pyproject.toml's package-data)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"*{template.SUFFIX}"' in pyproject


# In a fresh interpreter: which templates Jinja2 compiles while the goldens build three times.
COMPILES = """
import sys
from pathlib import Path

import jinja2

from paddlegen.compiler.build import build

compiled = []
original = jinja2.Environment.compile


def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
    compiled.append(name)
    return original(self, source, name, filename, raw, defer_init)


jinja2.Environment.compile = compile
for _ in range(3):
    for spec in sys.argv[1:]:
        build(Path(spec).read_bytes(), spec)
print("\\n".join(compiled))
"""


def test_each_template_is_compiled_once_per_process() -> None:
    specs = [str(spec_of(goldens_of(profile)[0])) for profile in TEMPLATED]
    result = subprocess.run([sys.executable, "-c", COMPILES, *specs], capture_output=True,
                            text=True, timeout=120, check=True)
    assert result.stdout.split() == [f"paddlegen.profiles:{profile}{template.SUFFIX}"
                                     for profile in TEMPLATED]


def imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a child run with PYTHONPROFILEIMPORTTIME imported (-X importtime)."""
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def test_only_a_command_that_writes_a_runbook_imports_jinja2(tmp_path: Path) -> None:
    trace = {"PYTHONPROFILEIMPORTTIME": "1"}
    validate = run_cli_process("validate", *GOLDEN_SPECS, env=trace)
    assert validate.returncode == 0, validate.stderr
    explain = run_cli_process("explain", GOLDEN / "kube-aws" / "spec.yaml", env=trace)
    assert explain.returncode == 0, explain.stderr
    for result in (validate, explain):
        assert "paddlegen.compiler.build" in imported(result)  # the trace is there
        assert not {"jinja2", "markupsafe"} & imported(result), result.args
    written = run_cli_process("build", GOLDEN / "local" / "spec.yaml", "-o", tmp_path / "out",
                              env=trace)
    assert written.returncode == 0, written.stderr
    assert "jinja2" in imported(written)
