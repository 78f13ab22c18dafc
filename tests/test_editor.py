"""The spec in an editor: `paddlegen init`'s modeline, and the JSON Schema as the real
yaml-language-server (VS Code's YAML extension; tests/lsp/package.json pins 1.25.0) reads it,
driven over LSP (tests/lsp_client.py): problems, hover and completion, on a spec in a nested
directory with the schema at the repository's root, as the README writes it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePath
from typing import Any

import pytest

from paddlegen.compiler.spec import modeline

from conftest import GOLDEN, run_cli
from lsp_client import LanguageServer, server_missing

# The settings an editor gives the server: the schema store and the Kubernetes CRD store off,
# since both fetch from the internet.
OFFLINE = {"validate": True, "hover": True, "completion": True,
           "schemaStore": {"enable": False}, "kubernetesCRDStore": {"enable": False}}
# VS Code's settings.json association of docs/editor.md: a path from the workspace's root.
ASSOCIATION = {"schemas": {"./paddlegen.schema.json": "**/spec.yaml"}}
# A class's name, as pydantic titles a model by default (EksSpec, WorkloadTraining).
CLASS_NAME = re.compile(r"(?:[A-Z][a-z0-9]+){2,}")
PADDLE_V1_KEYS = {"port", "portsNum", "portsNumForSparse", "gradientServers", "trainerCount",
                  "nic", "configDir", "jobPath"}
PADDLE_KEYS = {"script", "args", "gpusPerNode", "masterPort", "restarts",
               "gracePeriodSeconds", "queue"}


@pytest.mark.parametrize(("schema", "spec_dir", "line"), [
    ("paddlegen.schema.json", ".", "paddlegen.schema.json"),
    ("paddlegen.schema.json", "jobs/a", "../../paddlegen.schema.json"),
    ("schema/paddlegen.schema.json", "golden/eks", "../../schema/paddlegen.schema.json"),
    ("../paddlegen.schema.json", "a", "../../paddlegen.schema.json"),
    ("https://example.org/paddlegen.schema.json", "jobs/a",
     "https://example.org/paddlegen.schema.json"),
    ("/srv/paddlegen.schema.json", "jobs/a", "/srv/paddlegen.schema.json"),
])
def test_modeline_names_the_schema_from_the_spec(schema: str, spec_dir: str, line: str) -> None:
    """yaml-language-server reads a relative $schema from the spec's directory."""
    assert modeline(schema, PurePath(spec_dir)) == f"# yaml-language-server: $schema={line}\n"


def test_init_writes_a_new_spec_whose_modeline_reaches_the_schema(tmp_path: Path) -> None:
    result = run_cli("init", "-o", "jobs/a/spec.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    spec = tmp_path / "jobs" / "a" / "spec.yaml"
    first = spec.read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../../paddlegen.schema.json"
    assert (spec.parent / first.split("=", 1)[1]).resolve() == tmp_path / "paddlegen.schema.json"
    # printed, the spec is for the current directory, as before
    assert run_cli("init", cwd=tmp_path).stdout.startswith(
        "# yaml-language-server: $schema=paddlegen.schema.json\n")

    again = run_cli("init", "--profile", "local", "-o", "jobs/a/spec.yaml", cwd=tmp_path)
    assert again.returncode == 2 and "exists" in again.stderr
    assert spec.read_text().splitlines()[0] == first  # untouched


# --- the real language server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository as the README lays it out: the schema at its root (`paddlegen schema >
    paddlegen.schema.json`), a spec from `paddlegen init -o jobs/a/spec.yaml`."""
    missing = server_missing()
    if missing:
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("repo")
    schema = run_cli("schema")
    assert schema.returncode == 0, schema.stderr
    (root / "paddlegen.schema.json").write_text(schema.stdout)
    result = run_cli("init", "-o", "jobs/a/spec.yaml", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def schema(workspace: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((workspace / "paddlegen.schema.json").read_text())
    return loaded


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[LanguageServer]:
    """The server as an editor without settings for paddlegen runs it: the modeline alone
    names the schema."""
    language_server = LanguageServer(workspace, OFFLINE)
    try:
        language_server.start()
        yield language_server
    finally:
        language_server.stop()


def spec_file(workspace: Path, name: str, text: str) -> Path:
    path = workspace / "jobs" / name / "spec.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def golden_spec(name: str) -> str:
    """A golden spec, its modeline naming the schema at the root from jobs/<name>/, where
    spec_file writes every spec."""
    text = (GOLDEN / name / "spec.yaml").read_text().split("\n", 1)[1]
    return modeline("paddlegen.schema.json", PurePath("jobs", name)) + text


def line_and_character(text: str, offset: int) -> tuple[int, int]:
    """An offset of `text` as LSP counts a position (0-based)."""
    before = text[:offset]
    return before.count("\n"), len(before) - (before.rfind("\n") + 1)


def key_position(text: str, key: str) -> tuple[int, int]:
    """Where the first line that sets `key` has it."""
    found = re.search(rf"^ *({re.escape(key)}):", text, re.M)
    assert found, key
    return line_and_character(text, found.start(1))


def about(key: str) -> Callable[[list[dict[str, Any]]], bool]:
    """Whether diagnostics have one about `key`."""
    return lambda diagnostics: any(key in d["message"] for d in diagnostics)


def test_a_wrong_key_is_a_problem_in_the_starter(server: LanguageServer, workspace: Path
                                                 ) -> None:
    """init's jobs/a/spec.yaml, edited in the editor, finds the schema at the root: a misspelt
    key is reported where it is, and the source of every problem is a title of words."""
    path = workspace / "jobs" / "a" / "spec.yaml"
    text = path.read_text().replace("  nodes: 2 ", "  nodez: 2 ", 1)
    diagnostics = server.diagnostics(server.open(path, text), about("nodez"),
                                     "a problem about the key nodez")
    wrong = next(d for d in diagnostics if "nodez" in d["message"])
    line, character = key_position(text, "nodez")
    assert wrong["range"]["start"] == {"line": line, "character": character}
    assert not any("Unable to load schema" in d["message"] for d in diagnostics)
    assert [d["source"] for d in diagnostics if CLASS_NAME.search(d.get("source", ""))] == []


def test_a_valid_spec_has_no_problem(server: LanguageServer, workspace: Path) -> None:
    """A golden spec, its modeline pointed at the root's schema: nothing to report."""
    path = spec_file(workspace, "eks-paddle", golden_spec("eks-paddle"))
    assert server.diagnostics(server.open(path), lambda diagnostics: True,
                              "the problems of a valid spec") == []


@pytest.mark.parametrize(("spec", "key", "title", "field"), [
    (None, "workerInstanceType", "Worker instance type", ("EksCluster", "workerInstanceType")),
    (None, "gpusPerNode", "GPUs per node", ("WorkloadTraining", "then", "gpusPerNode")),
    (None, "training", "Training", ("EksSpec", "training")),
    # a model or null: the field's documentation, not the model's
    ("kubernetes", "resources", "Resources", ("WorkloadTraining", "resources")),
], ids=["workerInstanceType", "gpusPerNode", "training", "resources"])
def test_hover_shows_the_title_and_description(
        server: LanguageServer, workspace: Path, schema: dict[str, Any], spec: str | None,
        key: str, title: str, field: tuple[str, ...]) -> None:
    """Not "Workerinstancetype", nor "Gpuspernode || Gpuspernode", nor "WorkloadTraining".
    In init's spec, or in a golden one (`spec`)."""
    text = golden_spec(spec) if spec else (workspace / "jobs" / "a" / "spec.yaml").read_text()
    uri = server.open(spec_file(workspace, f"hover-{key}", text))
    node = schema["$defs"][field[0]]
    for part in field[1:]:
        node = node[part] if part == "then" else node["properties"][part]

    line, character = key_position(text, key)
    hover = server.hover(uri, line, character + 1)  # on the key, as a pointer rests
    assert hover.startswith(f"#### {title}\n\n{node['description'][:200]}"), hover


def completion_labels(server: LanguageServer, workspace: Path, name: str, training: str
                      ) -> set[str]:
    """What completion offers on a new line of `training`, in an eks spec."""
    text = (modeline("paddlegen.schema.json", PurePath("jobs", name))
            + "apiVersion: paddlegen/v1\nkind: TrainingJob\nprofile: eks\n"
            + f"training:\n{training}  \n  nodes: 2\n")
    uri = server.open(spec_file(workspace, name, text))
    line, _ = line_and_character(text, text.index("  \n  nodes"))
    return {item["label"] for item in server.completion(uri, line, 2)}


@pytest.mark.parametrize(("name", "framework", "offered", "refused"), [
    ("paddle", "  framework: paddle\n", PADDLE_KEYS, PADDLE_V1_KEYS),
    ("absent", "", PADDLE_KEYS, PADDLE_V1_KEYS),  # absent, and no paddle-v1 key: paddle
    ("paddle-v1", "  framework: paddle-v1\n", PADDLE_V1_KEYS, PADDLE_KEYS),
], ids=["paddle", "absent", "paddle-v1"])
def test_completion_offers_the_keys_of_the_framework(
        server: LanguageServer, workspace: Path, schema: dict[str, Any], name: str,
        framework: str, offered: set[str], refused: set[str]) -> None:
    labels = completion_labels(server, workspace, f"complete-{name}", framework)
    assert offered <= labels
    assert labels & refused == set()
    assert "launcher" in labels and "nodes" not in labels  # shared; already there
    classes = {name for name in schema["$defs"] if CLASS_NAME.fullmatch(name)}
    assert [label for label in labels if label in classes or CLASS_NAME.fullmatch(label)] == []


def test_a_key_of_the_other_framework_is_a_problem(server: LanguageServer, workspace: Path
                                                   ) -> None:
    text = golden_spec("eks-paddle").replace("  gpusPerNode: 1\n",
                                             "  gpusPerNode: 1\n  configDir: demo\n")
    uri = server.open(spec_file(workspace, "other-framework", text))
    server.diagnostics(uri, about("configDir"), "a problem about configDir")


def test_the_settings_association_of_docs_editor_md(workspace: Path) -> None:
    """Without a modeline, VS Code's `yaml.schemas` association for **/spec.yaml (as
    docs/editor.md writes it) names the schema."""
    text = (GOLDEN / "eks-paddle" / "spec.yaml").read_text().split("\n", 1)[1]  # no modeline
    path = spec_file(workspace, "associated", text.replace("  nodes: 2\n", "  nodez: 2\n"))
    language_server = LanguageServer(workspace, {**OFFLINE, **ASSOCIATION})
    try:
        language_server.start()
        uri = language_server.open(path)
        language_server.diagnostics(uri, about("nodez"), "a problem about the key nodez")
    finally:
        language_server.stop()
