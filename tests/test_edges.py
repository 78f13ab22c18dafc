"""Edges a valid-looking spec or environment used to pass through: an option-like EC2 key name,
a malformed SOURCE_DATE_EPOCH, a zero storage request, a NUL in an argument, a hostPath of the
node's own directories; and the shape of the code that sniffs specs (errors as values, no
AssertionError caught, no import up the layers)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from paddlegen.compiler import clock
from paddlegen.compiler.build import build
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.rules import node_exposure, node_path
from paddlegen.compiler.spec import load_spec

from conftest import GOLDEN, ROOT, SH_BLOCK, run_cli, run_cli_process


def golden_with(name: str, old: str, new: str) -> str:
    text = (GOLDEN / name / "spec.yaml").read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    return text.replace(old, new)


def position(text: str, line: str, value: str) -> str:
    """LINE:COL of `value` inside the one occurrence of `line` in `text`, counted from 1."""
    assert text.count(line) == 1, line
    start = text.index(line) + line.index(value)
    before = text[:start]
    return f"{before.count(chr(10)) + 1}:{start - before.rfind(chr(10))}"


def problem_lines(text: str) -> list[str]:
    """Every problem of the spec as `paddlegen validate` prints it: the errors (with the
    warnings) of an invalid spec, the warnings of a valid one."""
    try:
        valid = load_spec(text.encode(), "spec.yaml")
    except SpecError as error:
        return [str(problem) for problem in error.problems]
    return [str(problem) for problem in valid.warnings]


def runbook_of(text: str) -> str:
    [runbook] = [a.text for a in build(text.encode(), "spec.yaml").artifacts
                 if a.path == "RUNBOOK.md"]
    return runbook


# --- cluster.keyName: EC2's rule, and the `=` form that keeps -ops-key a value ---------------

@pytest.mark.parametrize("name", ["kube-aws", "kube-aws-v0.9.9"])
def test_an_option_like_key_name_is_valid_and_every_command_takes_it_with_equals(
        name: str) -> None:
    text = golden_with(name, "keyName: paddle-keypair", "keyName: -ops-key")
    assert problem_lines(text) == []
    runbook = runbook_of(text)
    for option in ("--key-names=-ops-key >/dev/null", "--key-name=-ops-key --query",
                   "--key-name=-ops-key \\", "delete-key-pair --key-name=-ops-key &&"):
        assert option in runbook
    # the key reaches no command after a space, where the AWS CLI would take it for an option
    # (its private key's file is a path in $ASSETS)
    assert "-ops-key" not in runbook.replace("=-ops-key", "").replace(
        '"$ASSETS/"-ops-key.pem', "")
    for block in SH_BLOCK.findall(runbook):
        assert subprocess.run(["bash", "-n"], input=block, text=True,
                              check=False).returncode == 0


@pytest.mark.parametrize("value", ['" ops-key"', '"ops-key "', '" "', '"ops\\tkey"',
                                   '"file://ops-key"', '"fileb://k"', '"[ops]"'])
def test_a_key_name_ec2_refuses_is_refused_at_its_position(value: str) -> None:
    line = f"keyName: {value}"
    text = golden_with("kube-aws", "keyName: paddle-keypair", line)
    written = value[1:-1].replace("\\t", "\t")
    assert problem_lines(text) == [
        f"spec.yaml:{position(text, line, value)}: cluster.keyName: {written!r} is not an "
        "EC2 key pair name: 1-255 printable ASCII characters, the first and the last no "
        "space, not beginning with file://, fileb:// or [ (which the AWS CLI would read as a "
        "file or JSON) [bad-format]"]


def test_a_key_name_may_hold_spaces_inside() -> None:
    text = golden_with("kube-aws", "keyName: paddle-keypair", "keyName: ops key")
    assert problem_lines(text) == []
    assert "--key-name='ops key'" in runbook_of(text)


# --- SOURCE_DATE_EPOCH: the environment, refused with one line and exit 2 ---------------------

RANGE = "it is outside the years 1 to 9999, -62135596800 to 253402300799"
NOT_DIGITS = "it takes an integer of ASCII digits, as `date +%s` prints it"


@pytest.mark.parametrize(("value", "reason"), [
    ("1700000000000", f"{RANGE}; milliseconds? it counts seconds"),  # the issue's
    ("\u0661\u0667\u0660\u0660\u0660\u0660\u0660\u0660\u0660\u0660", NOT_DIGITS),  # Arabic-Indic
    ("\u00b2", NOT_DIGITS),  # a digit to str.isdigit(), not to int()
    ("1.7e9", NOT_DIGITS),
    (" 1700000000", NOT_DIGITS),
    ("253402300800", RANGE),  # a second past 9999-12-31T23:59:59
    ("9" * 5000, RANGE),  # more digits than int() converts
])
def test_a_malformed_source_date_epoch_is_one_line_and_exit_2(value: str, reason: str) -> None:
    result = run_cli("validate", GOLDEN / "eks" / "spec.yaml", env={"SOURCE_DATE_EPOCH": value})
    shown = repr(value) if len(repr(value)) <= 100 else f"{repr(value)[:49]}…{repr(value)[-49:]}"
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", f"paddlegen: SOURCE_DATE_EPOCH={shown}: not a time in seconds since 1970 "
               f"({reason})\n")


def test_a_malformed_source_date_epoch_stops_a_build_process_before_it_writes(
        tmp_path: Path) -> None:
    result = run_cli_process("build", GOLDEN / "eks" / "spec.yaml", "-o", tmp_path / "out",
                             env={"SOURCE_DATE_EPOCH": "1700000000000"})
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("paddlegen: SOURCE_DATE_EPOCH='1700000000000': ")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("value", "day"), [
    ("", None), ("0", "1970-01-01"), ("-86400", "1969-12-31"), ("1795651200", "2026-11-26"),
    (str(clock.LAST), "9999-12-31"), (str(clock.FIRST), "0001-01-01"),
])
def test_a_well_formed_source_date_epoch_names_its_day(value: str, day: str | None) -> None:
    named = clock.source_date({"SOURCE_DATE_EPOCH": value})
    assert (None if named is None else str(named)) == day
    if day is not None:
        assert clock.today({"SOURCE_DATE_EPOCH": value}) == day


# --- storage: a claim or a volume of no size -------------------------------------------------

@pytest.mark.parametrize("name", ["eks", "kube-aws", "kubernetes"])
@pytest.mark.parametrize("zero", ['"0"', "0Gi", '"0.0"', '"0e3"'])
def test_a_zero_storage_request_is_refused_at_its_position(name: str, zero: str) -> None:
    old = next(line for line in (GOLDEN / name / "spec.yaml").read_text().splitlines()
               if line.startswith("  request: "))
    line = f"  request: {zero}"
    text = golden_with(name, old, line)
    shown = zero.strip('"')
    assert problem_lines(text) == [
        f"spec.yaml:{position(text, line, zero)}: storage.request: {shown} is zero: the API "
        "server refuses a claim that requests no storage (must be greater than zero); request "
        "what the job needs, such as 50Gi [storage-positive]"]


def test_a_zero_capacity_is_refused_at_its_position() -> None:
    line = "  capacity: 0Ti"
    text = golden_with("kube-aws", "  capacity: 100Gi", line)
    assert problem_lines(text) == [
        f"spec.yaml:{position(text, line, '0Ti')}: storage.capacity: 0Ti is zero: the API "
        "server refuses a volume of no capacity (must be greater than zero); give the file "
        "system's size, such as 100Gi [storage-positive]",
        # and the claim cannot fit in it
        f"spec.yaml:{position(text, '  request: 50Gi', '50Gi')}: storage.request: 50Gi is more "
        "than the volume's capacity 0Ti; the claim would never bind [storage-request]"]


# --- a NUL in an argument: no container starts with one ---------------------------------------

@pytest.mark.parametrize("name", ["eks-paddle", "kubernetes"])
def test_a_nul_in_an_argument_is_refused_at_its_position(name: str) -> None:
    line = 'args: [--out, "/mnt/shared\\0/output"]'
    quote = '"/mnt'
    text = golden_with(name, "args: [--out, /mnt/shared/linear/output]", line)
    assert problem_lines(text) == [
        f"spec.yaml:{position(text, line, quote)}: training.args[1]: "
        "'/mnt/shared\\x00/output' is not an argument without a NUL character (a process's "
        "arguments are C strings, which a NUL ends: the container could not start) "
        "[bad-format]"]


def test_no_string_of_the_schema_is_free_of_a_pattern() -> None:
    """Every string a spec writes has a grammar (or a list of values): so none carries a NUL,
    a line break or a control character into a command, an argument or a name."""
    import json

    schema = json.loads((ROOT / "schema" / "paddlegen.schema.json").read_text())
    free = []

    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "string" and not {"pattern", "enum", "const"} & node.keys():
                free.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(schema, "")
    assert free == []


# --- hostPath: the node's own directories, to pods that run as root ---------------------------

@pytest.mark.parametrize(("name", "path", "exposed"), [
    ("local", "/etc", "the node's configuration (its users and sudoers, the kubelet's settings)"),
    ("local", "/proc", "the node's processes and kernel settings"),
    ("kube-up", "/var/run", "the node's runtime sockets (the container runtime's: every "
                            "container of the node)"),
    ("kube-up", "/root/.ssh", "root's SSH keys (authorized_keys: a login to the node)"),
    ("kube-up", "/etc/kubernetes", "inside /etc, the node's configuration (its users and "
                                   "sudoers, the kubelet's settings)"),
    ("local", "/var/lib", "the parent of /var/lib/kubelet, the kubelet's state (every pod's "
                          "volumes and secrets)"),
    ("local", "/home", "every user's home (their SSH keys and shell start-up files)"),
])
def test_a_host_path_of_the_nodes_own_is_a_warning_at_its_position(name: str, path: str,
                                                                   exposed: str) -> None:
    old = next(line for line in (GOLDEN / name / "spec.yaml").read_text().splitlines()
               if line.startswith("  hostPath: "))
    line = f"  hostPath: {path}"
    text = golden_with(name, old, line)
    assert problem_lines(text) == [
        f"spec.yaml:{position(text, line, path)}: warning: storage.hostPath: {path} is "
        f"{exposed}: mounted into pods that run as root, it is theirs to read and rewrite; use "
        "a directory of the job's own, such as /home/work/paddle_output [host-path]"]
    with pytest.raises(SpecError):  # --strict
        load_spec(text.encode(), "spec.yaml", strict=True)


@pytest.mark.parametrize("path", ["/home/admin/efs", "/home/work/paddle_output", "/data",
                                  "/etcetera", "/var/lib/paddle", "/mnt/efs"])
def test_a_directory_of_the_jobs_own_is_no_warning(path: str) -> None:
    assert node_exposure(path) is None


@pytest.mark.parametrize("written", ["/etc", "//etc", "/etc/", "/etc/../etc", "/./etc",
                                     "///etc//", "/../etc"])
def test_a_host_path_is_compared_as_the_node_reads_it(written: str) -> None:
    assert node_path(written) == "/etc"
    assert node_exposure(written) == node_exposure("/etc") is not None


# --- the code: errors as values, no AssertionError caught, no import up the layers -----------

def handler_names(handler: ast.ExceptHandler) -> list[str]:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [kind.id if isinstance(kind, ast.Name) else
            kind.attr if isinstance(kind, ast.Attribute) else ast.unparse(kind)
            for kind in kinds if kind is not None]


def test_no_handler_in_compiler_catches_assertion_error_or_four_types() -> None:
    broad = []
    for path in sorted((ROOT / "compiler").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ExceptHandler):
                names = handler_names(node)
                if "AssertionError" in names or len(names) >= 4:
                    broad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {', '.join(names)}")
    assert broad == []


def test_no_profile_imports_from_the_spec_loader() -> None:
    """compiler/spec.py loads specs onto the profiles: a profile that imports it runs up the
    layers (did_you_mean lives with the problems)."""
    upward = [f"{path.relative_to(ROOT)}:{node.lineno}"
              for path in sorted((ROOT / "profiles").rglob("*.py"))
              for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
              if isinstance(node, ast.ImportFrom) and node.module == "paddlegen.compiler.spec"]
    assert upward == []


def test_spec_sniffing_needs_no_assert_under_python_o() -> None:
    """ruamel checks a %YAML version with `assert`, which -O removes: catching AssertionError,
    is_spec took a %YAML 1.3 file for no spec, and under -O for one. The loader's parse
    refuses the version itself, so is_spec answers the same either way."""
    head = b"%YAML 1.3\n---\napiVersion: paddlegen/v1\nkind: TrainingJob\n"
    code = ("import sys; from paddlegen.compiler.cli import is_spec; "
            "print(is_spec(sys.stdin.buffer.read()))")
    for flags in ([], ["-O"]):
        result = subprocess.run([sys.executable, *flags, "-c", code], input=head,
                                capture_output=True, check=False)
        assert (result.returncode, result.stdout, result.stderr) == (0, b"False\n", b"")
