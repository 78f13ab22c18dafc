"""`--format sarif` and `--format github` of validate and check, as CI systems read them: SARIF
logs valid against the official schema (schema/sarif/), workflow commands escaped as GitHub's
toolkit escapes them; and docs/ci.md's workflow, run as GitHub's runner runs its steps."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from ruamel.yaml import YAML

from paddlegen.compiler.problems import Position, Problem
from paddlegen.compiler.reference import rules_reference
from paddlegen.compiler.report_formats import (
    as_github,
    as_sarif,
    documented_rules,
    escape_data,
    escape_property,
    github_command,
)

from conftest import GOLDEN, ROOT, run_cli

SARIF_DIR = ROOT / "schema" / "sarif"
SARIF_SCHEMA = SARIF_DIR / "sarif-schema-2.1.0.json"
BAD_SPECS = ROOT / "tests" / "bad_specs"
VENV_BIN = Path(sys.executable).parent
GOOD_SPEC = GOLDEN / "kubernetes" / "spec.yaml"
# RFC 3986: a relative reference whose first segment has no ':' (else it reads as a scheme),
# and a file: URI; the Draft 4 format checker does not check "uri-reference".
_URI_CHAR = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@]|%[0-9A-F]{2})"
RELATIVE_URI = re.compile(rf"{_URI_CHAR}+(?:/(?:{_URI_CHAR}|:)*)*")
FILE_URI = re.compile(rf"file:///(?:(?:{_URI_CHAR}|:)*/?)*")


def sarif_validator() -> Any:
    """A validator of the vendored schema, of the draft its $schema declares (Draft 4)."""
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    assert validator is jsonschema.Draft4Validator, schema["$schema"]
    validator.check_schema(schema)
    return validator(schema, format_checker=validator.FORMAT_CHECKER)


def valid_sarif(text: str) -> dict[str, Any]:
    """The log, after checking it against the schema and its URIs against RFC 3986."""
    log: dict[str, Any] = json.loads(text)
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
              for error in sarif_validator().iter_errors(log)]
    assert errors == []
    for result in log["runs"][0]["results"]:
        for location in result.get("locations", []):
            uri = location["physicalLocation"]["artifactLocation"]["uri"]
            assert RELATIVE_URI.fullmatch(uri) or FILE_URI.fullmatch(uri), uri
    return log


def spec_problems(*args: str | Path, cwd: Path) -> list[dict[str, Any]]:
    """The problems as `--format json` gives them: the reference the other formats match."""
    result = run_cli(*args, "--format", "json", cwd=cwd)
    problems: list[dict[str, Any]] = json.loads(result.stdout)
    return problems


def said(problem: dict[str, Any]) -> str:
    return f"{problem['path']}: {problem['message']}" if problem["path"] else problem["message"]


def github_line(problem: dict[str, Any]) -> str:
    """A workflow command as actions/toolkit's Command.toString writes one (command.ts), of the
    message and file made printable first (a character a terminal would not show, escaped)."""
    def data(text: str) -> str:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    def prop(text: str) -> str:
        return data(text).replace(":", "%3A").replace(",", "%2C")

    return (f"::{problem['severity']} file={prop(problem['file'])},line={problem['line']},"
            f"col={problem['column']},title={prop(problem['rule'])}::{data(said(problem))}")


def copy_bad_specs(directory: Path, *names: str) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(BAD_SPECS / f"{name}.yaml", directory / f"{name}.yaml")
    return [f"{directory.name}/{name}.yaml" for name in names]


def edited_spec(path: Path, old: str, new: str) -> Path:
    text = GOOD_SPEC.read_text()
    assert text.count(old) == 1, old
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace(old, new))
    return path


# --- the vendored schema --------------------------------------------------------------------


def test_the_vendored_sarif_schema_is_the_official_one_its_origin_records() -> None:
    raw = SARIF_SCHEMA.read_bytes()
    origin = (SARIF_DIR / "ORIGIN.md").read_text(encoding="utf-8")
    blob = hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest()  # git's object id
    assert (f"| `sarif-schema-2.1.0.json` | `{blob}` | {len(raw):,} | "
            f"`{hashlib.sha256(raw).hexdigest()}` |") in origin
    schema = json.loads(raw)
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["id"] in origin
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


# --- SARIF ----------------------------------------------------------------------------------


def test_validate_sarif_is_valid_with_one_result_per_problem_at_its_place(tmp_path: Path) -> None:
    work = tmp_path / "work"
    specs = copy_bad_specs(work / "specs", "gradient-servers-over-nodes", "port-zero",
                           "unknown-nested-key", "yaml-unclosed-bracket", "missing-profile")
    absolute = edited_spec(work / "specs" / "warned.yaml", "namespace: ml-team",
                           "namespace: kube-system")  # given by its absolute path
    outside = edited_spec(tmp_path / "elsewhere.yaml", "nodes: 4", "nodes: 0")
    args: tuple[str | Path, ...] = ("validate", *specs, absolute, outside)
    result = run_cli(*args, "--format", "sarif", cwd=work)
    assert result.returncode == 2, result.stderr  # as in text: any error exits 2
    assert result.stderr == ""
    log = valid_sarif(result.stdout)
    assert log["version"] == "2.1.0"
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "paddlegen" and driver["version"] == run_cli(
        "--version").stdout.split()[1]
    rules = [rule["id"] for rule in driver["rules"]]

    problems = spec_problems(*args, cwd=work)
    assert {p["severity"] for p in problems} == {"error", "warning"}
    assert len(run["results"]) == len(problems) > len(specs)
    for problem, found in zip(problems, run["results"], strict=True):
        assert found["ruleId"] == problem["rule"]
        assert rules[found["ruleIndex"]] == problem["rule"]
        assert found["level"] == problem["severity"]
        assert found["message"] == {"text": said(problem)}
        [location] = found["locations"]
        place = location["physicalLocation"]
        assert place["region"] == {"startLine": problem["line"],
                                   "startColumn": problem["column"]}
        uri = place["artifactLocation"]
        if problem["file"] == str(outside):
            assert uri == {"uri": outside.as_uri()}
        else:  # relative to the working directory, an absolute path below it too
            assert (work / uri["uri"]).samefile(work / problem["file"])
            assert uri == {"uri": (work / problem["file"]).relative_to(work).as_posix(),
                           "uriBaseId": "%SRCROOT%"}


def test_the_rules_carry_the_reference_descriptions_and_severities(tmp_path: Path) -> None:
    result = run_cli("validate", "--format", "sarif", GOOD_SPEC, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    log = valid_sarif(result.stdout)
    assert log["runs"][0]["results"] == []
    rules = {rule["id"]: rule for rule in log["runs"][0]["tool"]["driver"]["rules"]}
    reference = rules_reference()
    rows = re.findall(r"^\| `([^`]+)` \| (error|warning) \| ([^|]+) \| (.+) \|$", reference,
                      re.M)
    assert list(rules) == [name for name, *_ in rows]  # every rule, in the reference's order
    for name, severity, _, doc in rows:
        rule = rules[name]
        assert rule["help"]["text"].replace("|", "\\\\|") == doc
        assert doc.startswith(rule["shortDescription"]["text"].replace("|", "\\\\|"))
        assert rule["shortDescription"]["text"].endswith((".", "?", "!"))
        assert rule["defaultConfiguration"] == {"level": severity}
    assert rules["drift"]["defaultConfiguration"] == {"level": "error"}


def test_the_same_problems_give_the_same_bytes(tmp_path: Path) -> None:
    specs = copy_bad_specs(tmp_path / "specs", "port-zero", "zone-not-in-region")
    first = run_cli("validate", "--format", "sarif", *specs, cwd=tmp_path)
    second = run_cli("validate", "--format", "sarif", *reversed(specs), cwd=tmp_path)
    assert first.stdout == second.stdout  # problems sorted by place
    [run] = json.loads(first.stdout)["runs"]
    assert set(run) == {"tool", "columnKind", "results"}  # no invocation: no time, no machine


def drifted_broken_and_linked_trees(root: Path) -> list[str]:
    """Three specs, each with an out/ beside it: one whose tree drifted, one invalid, one whose
    out/ is a symlink."""
    drifted = root / "jobs" / "drifted" / "spec.yaml"
    drifted.parent.mkdir(parents=True)
    shutil.copy(GOOD_SPEC, drifted)
    built = run_cli("build", drifted, "-o", drifted.parent / "out")
    assert built.returncode == 0, built.stderr
    job = next((drifted.parent / "out" / "k8s").glob("*-job-*.yaml"))
    job.write_text(job.read_text() + "# edited by hand\n")
    [broken] = copy_bad_specs(root / "jobs" / "broken", "gradient-servers-over-nodes")
    (root / "jobs" / "broken" / "out").mkdir()
    linked = root / "jobs" / "linked" / "spec.yaml"
    linked.parent.mkdir(parents=True)
    shutil.copy(GOOD_SPEC, linked)
    (linked.parent / "out").symlink_to(drifted.parent / "out")
    return ["jobs/broken/" + Path(broken).name, "jobs/drifted/spec.yaml", "jobs/linked/spec.yaml"]


def test_check_sarif_reports_spec_problems_drift_and_trees_it_cannot_compare(
        tmp_path: Path) -> None:
    specs = drifted_broken_and_linked_trees(tmp_path)
    text = run_cli("check", *specs, cwd=tmp_path)
    result = run_cli("check", "--format", "sarif", *specs, cwd=tmp_path)
    assert result.returncode == text.returncode == 2  # an invalid spec outweighs drift
    log = valid_sarif(result.stdout)
    found = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"])
             for r in log["runs"][0]["results"]]
    assert [(rule, level, place["artifactLocation"]["uri"], place["region"])
            for rule, level, place in found] == [
        ("gradient-servers", "error", specs[0], {"startLine": 35, "startColumn": 20}),
        ("drift", "error", specs[1], {"startLine": 1, "startColumn": 1}),
        ("output-tree", "error", specs[2], {"startLine": 1, "startColumn": 1}),
    ]
    messages = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert messages[1] == ("jobs/drifted/out is not what jobs/drifted/spec.yaml compiles to; "
                           "to update it: paddlegen build jobs/drifted/spec.yaml -o "
                           "jobs/drifted/out")
    assert messages[2].startswith("jobs/linked/out is a symlink")
    # the text lines say the same; the diff goes to stderr, stdout being the log's
    assert f"paddlegen: {messages[1]}" in text.stderr.splitlines()
    assert "+# edited by hand" not in result.stdout
    assert "# edited by hand" in result.stderr and "# edited by hand" in text.stdout


def test_check_drift_alone_exits_1_in_every_format(tmp_path: Path) -> None:
    specs = drifted_broken_and_linked_trees(tmp_path)
    for output in ("text", "json", "sarif", "github"):
        result = run_cli("check", "--format", output, specs[1], cwd=tmp_path)
        assert result.returncode == 1, (output, result.stderr)
    github = run_cli("check", "--format", "github", specs[1], cwd=tmp_path)
    assert github.stdout == (
        "::error file=jobs/drifted/spec.yaml,line=1,col=1,title=drift::jobs/drifted/out is not "
        "what jobs/drifted/spec.yaml compiles to; to update it: paddlegen build "
        "jobs/drifted/spec.yaml -o jobs/drifted/out\n")


def test_check_places_a_tree_without_its_spec_at_its_manifest(tmp_path: Path) -> None:
    gone = tmp_path / "jobs" / "gone" / "spec.yaml"
    gone.parent.mkdir(parents=True)
    shutil.copy(GOOD_SPEC, gone)
    assert run_cli("build", gone, "-o", gone.parent / "out").returncode == 0
    gone.unlink()
    lonely = tmp_path / "lonely.yaml"  # a spec with no tree
    shutil.copy(GOOD_SPEC, lonely)
    found = run_cli("check", "--format", "sarif", cwd=tmp_path)
    assert found.returncode == 2, found.stderr
    [result] = valid_sarif(found.stdout)["runs"][0]["results"]
    assert (result["ruleId"], result["locations"][0]["physicalLocation"]) == (
        "output-tree", {"artifactLocation": {"uri": "jobs/gone/out/.paddlegen-manifest",
                                             "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": 1, "startColumn": 1}})
    named = run_cli("check", "--format", "github", "lonely.yaml", cwd=tmp_path)
    assert named.returncode == 1, named.stderr
    assert named.stdout.startswith(
        "::error file=lonely.yaml,line=1,col=1,title=drift::no output tree below the current "
        "directory records lonely.yaml")


def test_a_problem_of_no_file_has_no_location() -> None:
    problem = Problem(Position("", 1, 1), "", "kube-schema", "no schemas for 1.99")
    [result] = json.loads(as_sarif([problem], documented_rules(), "0.0.0", "/"))[
        "runs"][0]["results"]
    assert "locations" not in result
    assert as_github([problem], "/") == "::error title=kube-schema::no schemas for 1.99\n"


# --- GitHub workflow commands ---------------------------------------------------------------


def test_workflow_commands_escape_as_the_toolkit_does() -> None:
    # command.ts: escapeData % \r \n; escapeProperty those and : ,
    assert escape_data("50% a:b,c\r\nd%0A") == "50%25 a:b,c%0D%0Ad%250A"
    assert escape_property("50% a:b,c\r\nd%0A") == "50%25 a%3Ab%2Cc%0D%0Ad%250A"
    # the message and the file are printable first, as a text line is: one line, no escape
    # sequence for the job's log (which renders them), then the toolkit's escaping
    problem = Problem(Position("dir,1/a:b%\x1b[2J.yaml", 3, 7), "training.port", "port-range",
                      "100% of ports: 1, 2\r\nand \x1b]0;more\x07", "warning")
    assert github_command(problem, "/repo") == (
        "::warning file=dir%2C1/a%3Ab%25\\x1b[2J.yaml,line=3,col=7,title=port-range::"
        "training.port: 100%25 of ports: 1, 2\\r\\nand \\x1b]0;more\\x07")


def test_validate_github_prints_one_command_per_problem(tmp_path: Path) -> None:
    # a file name and a key with every character the escaping is for
    odd = edited_spec(tmp_path / "specs" / "a,b:50%.yaml", "  nodes: 4\n",
                      '  nodes: 4\n  "no%des,x:\\ny": 1\n')
    specs = [*copy_bad_specs(tmp_path / "specs", "port-zero", "yaml-unclosed-bracket"),
             str(odd.relative_to(tmp_path))]
    warned = edited_spec(tmp_path / "warned.yaml", "namespace: ml-team", "namespace: kube-system")
    result = run_cli("validate", "--format", "github", *specs, warned.name, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == ""
    problems = spec_problems("validate", *specs, warned.name, cwd=tmp_path)
    assert result.stdout.splitlines() == [github_line(p) for p in problems]
    assert ("::error file=specs/a%2Cb%3A50%25.yaml,line=20,col=3,title=unknown-key::"
            "training.no%25des,x:\\ny: unknown key; did you mean 'nodes'?") in result.stdout
    assert any(line.startswith("::warning file=warned.yaml,") for line in
               result.stdout.splitlines())


def test_warnings_alone_pass_and_nothing_means_empty_output(tmp_path: Path) -> None:
    warned = edited_spec(tmp_path / "spec.yaml", "namespace: ml-team", "namespace: kube-system")
    result = run_cli("validate", "--format", "github", "spec.yaml", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("::warning file=spec.yaml,")
    strict = run_cli("validate", "--strict", "--format", "github", warned, cwd=tmp_path)
    assert strict.returncode == 2 and strict.stdout.startswith("::error file=spec.yaml,")
    clean = run_cli("validate", "--format", "github", GOOD_SPEC, cwd=tmp_path)
    assert (clean.returncode, clean.stdout, clean.stderr) == (0, "", "")


def test_explain_offers_no_problem_formats() -> None:
    result = run_cli("explain", GOOD_SPEC, "--format", "sarif")
    assert result.returncode == 2 and "'sarif' is not one of 'text', 'json'" in result.stderr


# --- docs/ci.md's workflow ------------------------------------------------------------------

CI_DOC = ROOT / "docs" / "ci.md"
WORKFLOW_NAME = "# .github/workflows/paddlegen.yml\n"
# How the runner runs a step of `shell: bash` (GitHub's documented template for it).
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
PADDLEGEN_COMMAND = re.compile(r"(?:^|[\s|(])paddlegen\s")


def workflow() -> dict[str, Any]:
    blocks = re.findall(r"```yaml\n(.*?)```", CI_DOC.read_text(encoding="utf-8"), re.S)
    [block] = [block for block in blocks if block.startswith(WORKFLOW_NAME)]
    loaded: dict[str, Any] = YAML(typ="safe", pure=True).load(block)
    return loaded


def ci_repository(root: Path) -> None:
    """A repository of specs: a broken one, a valid one whose committed tree has drifted, and
    YAML that is no spec (one named like an option)."""
    copy_bad_specs(root / "jobs" / "broken", "gradient-servers-over-nodes")
    linear = root / "jobs" / "linear"
    linear.mkdir(parents=True)
    shutil.copy(GOOD_SPEC, linear / "spec.yaml")
    built = run_cli("build", linear / "spec.yaml", "-o", linear / "out")
    assert built.returncode == 0, built.stderr
    service = next((linear / "out" / "k8s").glob("*-service-*.yaml"))
    service.write_text(service.read_text().replace("linear", "renamed", 1))
    (root / "deploy").mkdir()
    (root / "deploy" / "values.yaml").write_text("replicas: 2\nkind: Values\n")
    (root / "-notes.yaml").write_text("todo: []\n")  # a name an option parser would take
    for git in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *git], cwd=root, check=True, capture_output=True)


def run_step(step: dict[str, Any], shell: str, root: Path) -> subprocess.CompletedProcess[str]:
    assert shell == "bash"
    script = root.parent / "step.sh"
    script.write_text(step["run"])
    env = {**os.environ, **step.get("env", {}),
           "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([*BASH, str(script)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_sample_workflow_annotates_and_writes_a_valid_sarif_log(tmp_path: Path) -> None:
    flow = workflow()
    [job] = flow["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = [step for step in job["steps"] if PADDLEGEN_COMMAND.search(step.get("run", ""))]
    assert len(steps) == 3
    # after the first fails, the others still run; so does the upload
    assert all(step["if"] == "${{ !cancelled() }}" for step in steps[1:])
    [upload] = [step for step in job["steps"]
                if step.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert upload["if"] == "${{ !cancelled() }}"

    root = tmp_path / "repository"
    ci_repository(root)
    shell = flow["defaults"]["run"]["shell"]
    validate, check, sarif = (run_step(step, shell, root) for step in steps)

    broken = spec_problems("validate", "jobs/broken/gradient-servers-over-nodes.yaml",
                           cwd=root)
    assert validate.returncode != 0, validate.stderr
    assert validate.stdout.splitlines() == [github_line(p) for p in broken]
    assert check.returncode == 1, check.stderr  # the drifted tree; the broken spec has none
    assert check.stdout.splitlines() == [
        "::error file=jobs/linear/spec.yaml,line=1,col=1,title=drift::jobs/linear/out is not "
        "what jobs/linear/spec.yaml compiles to; to update it: paddlegen build "
        "jobs/linear/spec.yaml -o jobs/linear/out"]
    assert sarif.returncode == 2 and sarif.stdout == "", sarif.stderr
    log = valid_sarif((root / upload["with"]["sarif_file"]).read_text(encoding="utf-8"))
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
            for r in log["runs"][0]["results"]] == [
        (p["rule"], p["file"]) for p in broken]


@pytest.mark.parametrize("output", ["json", "sarif", "github"])
def test_stdout_is_the_report_alone_in_every_format(output: str, tmp_path: Path) -> None:
    specs = copy_bad_specs(tmp_path / "specs", "port-zero")
    result = run_cli("validate", "--format", output, *specs, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == ""
    if output != "github":
        json.loads(result.stdout)
