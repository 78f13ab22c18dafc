"""Hostile values: a spec of megabyte values is refused in bounded memory, with problem lines of
bounded length that any stream can print, whatever the file is named; and `check` on every core
ends without an error at exit."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ConfigDict, TypeAdapter, ValidationError

from paddlegen.compiler import batch
from paddlegen.compiler.build import build
from paddlegen.compiler.loader import MAX_BYTES
from paddlegen.compiler.problems import QUOTE_LIMIT, SpecError, quoted
from paddlegen.schema import patterns
from paddlegen.schema.models import text

from conftest import GOLDEN, PADDLEGEN, run_cli
from profile_harness import goldens_of, profile_names, spec_of

RSS_LIMIT = 150 << 20  # bytes, for a whole paddlegen process reading a 1 MB value
OUTPUT_LIMIT = 4096  # characters of problems about one spec of huge values
VALUE_SIZE = MAX_BYTES - 4096  # a value as large as the loader lets in, with the rest of a spec
GRAMMARS = {name: value for name, value in vars(patterns).items()
            if isinstance(value, patterns.Pattern)}
KUBE_AWS = (GOLDEN / "kube-aws" / "spec.yaml").read_text()
EKS = (GOLDEN / "eks" / "spec.yaml").read_text()


def huge(unit: str, prefix: str = "", end: str = "!") -> str:
    """A value of VALUE_SIZE characters: `prefix`, `unit` repeated, `end` (which no grammar
    takes there, so the regex would backtrack through every repetition)."""
    body = prefix + unit * (VALUE_SIZE // len(unit))
    return body[:VALUE_SIZE - len(end)] + end


def edited(spec: str, old: str, new: str) -> bytes:
    assert spec.count(old) == 1, old
    return spec.replace(old, new).encode()


# A child's peak RSS, in bytes, measured by a parent of its own: RUSAGE_CHILDREN of the test
# process would count every child it ever had.
PEAK_RSS = """
import resource, subprocess, sys
result = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)
scale = 1 if sys.platform == "darwin" else 1024  # macOS counts bytes, Linux kilobytes
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale, result.returncode)
sys.stderr.write(result.stderr)
"""


def peak_rss(*command: str | Path) -> tuple[int, int, str]:
    """The command's peak RSS in bytes, its exit code and its stderr."""
    result = subprocess.run([sys.executable, "-c", PEAK_RSS, *map(str, command)],
                            capture_output=True, text=True, check=True)
    rss, code = map(int, result.stdout.split())
    return rss, code, result.stderr


# Every grammar with values built to backtrack: long runs of its separators after prefixes some
# grammars need, ending in a character none takes.
GRAMMAR_SCRIPT = """
import sys
from typing import Annotated
from pydantic import ConfigDict, TypeAdapter, ValidationError
from paddlegen.schema import patterns
from paddlegen.schema.models import text

size = int(sys.argv[1])
config = ConfigDict(strict=True, regex_engine="python-re")
for pattern in [v for v in vars(patterns).values() if isinstance(v, patterns.Pattern)]:
    adapter = TypeAdapter(Annotated[str, text(pattern)], config=config)
    for prefix in ("", "arn:aws", "s3://abc", "fs-", "a/"):
        for unit in ("a-", "a.", "/a", "a", "a_", "-a", "a.a-", "0.", "a:", "A-"):
            value = (prefix + unit * size)[:size - 1] + "!"
            try:
                adapter.validate_python(value)
            except ValidationError:
                continue
            sys.exit(f"{pattern.meaning}: took {value[:40]!r}...")
"""


def test_every_grammar_reads_a_megabyte_value_in_bounded_memory() -> None:
    rss, code, stderr = peak_rss(sys.executable, "-c", GRAMMAR_SCRIPT, str(VALUE_SIZE))
    assert code == 0, stderr
    assert rss < RSS_LIMIT


@pytest.mark.parametrize(("spec", "old", "new"), [
    (EKS, "image: paddlepaddle/paddle-tutorial:k8s_train", f'image: "{huge("a-")}"'),
    (KUBE_AWS, "kmsKeyArn: arn:aws:kms:us-west-2:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-"
               "0c1d2e3f4a5b", f'kmsKeyArn: "{huge("-a", prefix="arn:aws")}"'),
    (KUBE_AWS, "nodeSelector: {beta.kubernetes.io/os: linux}",
     f'nodeSelector: {{"{huge("a.a-")}": linux}}'),
    (KUBE_AWS, "profile: kube-aws", f'profile: kube-aws\n"{huge("k", end="k")}": 1'),
], ids=["eks-image", "kms-key-arn", "label-key", "unknown-key"])
def test_validating_a_megabyte_value_stays_in_bounded_memory(
        spec: str, old: str, new: str, tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_bytes(edited(spec, old, new))
    rss, code, stderr = peak_rss(*PADDLEGEN, "validate", path)
    assert code == 2, stderr[:OUTPUT_LIMIT]
    assert "Traceback" not in stderr
    assert len(stderr) < OUTPUT_LIMIT
    assert rss < RSS_LIMIT


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_a_value_over_its_grammars_limit_is_refused_before_its_regex(name: str) -> None:
    pattern = GRAMMARS[name]
    adapter = TypeAdapter(Annotated[str, text(pattern)],
                          config=ConfigDict(strict=True, regex_engine="python-re"))
    with pytest.raises(ValidationError) as raised:
        adapter.validate_python("a" * (pattern.max_length + 1))
    assert raised.value.errors()[0]["type"] == "string_too_long"


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_a_grammars_limit_refuses_nothing_its_regex_takes(name: str) -> None:
    # the regex's own widest match, where it has one (Python's regex parser measures it)
    parser = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")
    pattern = GRAMMARS[name]
    _, widest = parser.parse(pattern.regex).getwidth()
    assert widest >= parser.MAXREPEAT or widest <= pattern.max_length


def hostile_specs() -> dict[str, bytes]:
    """Specs with one huge value, key, tag, alias or number each, under the loader's limit."""
    cases = {}
    for profile in profile_names():  # a golden of each profile, its first
        spec = spec_of(goldens_of(profile)[0]).read_text()
        for number, line in enumerate(spec.splitlines(), 1):
            head, colon, value = line.partition(": ")
            if colon and not line.startswith("#") and value[:1] not in ("{", "[", "") \
                    and spec.count(line) == 1:
                cases[f"{profile}-{number}-{head.strip()}"] = edited(
                    spec, line, f'{head}: "{huge("a-")}"')
    top = "profile: kube-aws"
    cases.update({
        "unknown-key": edited(KUBE_AWS, top, f'{top}\n"{huge("k", end="k")}": 1'),
        "profile": edited(KUBE_AWS, top, f'profile: "{huge("a-")}"'),
        "tag": edited(KUBE_AWS, top, f"{top}\nextra: !{huge('t', end='t')} x"),
        "tag-handle": edited(KUBE_AWS, top, f"{top}\nextra: !{huge('t', end='t')}!x x"),
        "alias": edited(KUBE_AWS, top, f"{top}\nextra: *{huge('t', end='t')}"),
        "bool": edited(KUBE_AWS, top, f"{top}\nextra: !!bool {huge('t', end='t')}"),
        "placeholder": edited(KUBE_AWS, "nic: eth0", f"nic: <{huge('t', end='t')}>"),
        "null-port": edited(KUBE_AWS, "port: 7164", f"port: !!null {huge('t', end='t')}"),
        "label-value": edited(KUBE_AWS, "{beta.kubernetes.io/os: linux}",
                              f"{{disk: {huge('a.')}}}"),
        "yaml-version-digits": f"%YAML 1.{'1' * 5000}\n---\n{KUBE_AWS}".encode(),
        "yaml-version-huge": f"%YAML 1.{'1' * VALUE_SIZE}\n---\n{KUBE_AWS}".encode(),
        "escape-out-of-range": edited(KUBE_AWS, top, f'{top}\nextra: "\\UFFFFFFFF"'),
        "surrogate-keys": edited(KUBE_AWS, top, f'{top}\nextra: {{"\\udcff": 1, "\\udcff": 2}}'),
    })
    return cases


HOSTILE = hostile_specs()


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_problems_about_huge_values_are_short_and_printable(name: str) -> None:
    with pytest.raises(SpecError) as raised:
        build(HOSTILE[name], "spec.yaml")
    lines = [str(problem) for problem in raised.value.problems]
    assert lines
    assert sum(map(len, lines)) < OUTPUT_LIMIT
    for line in lines:
        line.encode("utf-8")  # strict: nothing a stream could fail to encode


@given(st.one_of(st.text(), st.integers(), st.none(), st.text(min_size=90, max_size=3000)))
def test_quoted_is_repr_for_short_values_and_its_ends_for_long_ones(value: object) -> None:
    whole = repr(value)
    if len(whole) <= QUOTE_LIMIT:
        assert quoted(value) == whole
    else:
        assert len(quoted(value)) <= QUOTE_LIMIT
        head, _, tail = quoted(value).partition("…")
        assert whole.startswith(head) and whole.endswith(tail)
        assert len(head) >= QUOTE_LIMIT // 3 and len(tail) >= QUOTE_LIMIT // 3


def trees(tmp_path: Path, count: int) -> list[Path]:
    """`count` kube-aws specs, each with its built tree in an out/ beside it."""
    first = tmp_path / "team00" / "spec.yaml"
    first.parent.mkdir()
    first.write_text(KUBE_AWS)
    built = run_cli("build", first, "-o", first.parent / "out")
    assert built.returncode == 0, built.stderr
    specs = [first]
    for index in range(1, count):
        directory = tmp_path / f"team{index:02d}"
        shutil.copytree(first.parent, directory)
        specs.append(directory / "spec.yaml")
    return specs


def test_check_on_every_core_ends_without_an_error_at_exit(tmp_path: Path) -> None:
    specs = trees(tmp_path, batch.SPECS_PER_WORKER * max(2, batch.usable_cpus()))  # a worker a core
    # the error came at exit in some runs, as the pool's threads raced: five runs, side by side
    # (processes: their workers, and their exit, are a process's)
    runs = [subprocess.Popen([*PADDLEGEN, "check", *map(str, specs)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(5)]
    for run in runs:
        _, stderr = run.communicate(timeout=60)
        assert run.returncode == 0, stderr
        assert "Exception ignored" not in stderr
        assert "Traceback" not in stderr


@pytest.mark.parametrize("env", [{"LC_ALL": "C"}, {"LC_ALL": "C.UTF-8"},
                                 {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}],
                         ids=["c", "c-utf8", "strict-stdout"])
def test_file_names_that_are_not_utf8_print_escaped(env: dict[str, str], tmp_path: Path) -> None:
    directory = tmp_path / os.fsdecode(b"team\xff")
    try:
        directory.mkdir()
    except (OSError, UnicodeError):
        pytest.skip("this file system takes UTF-8 names only")
    good = directory / "spec.yaml"
    good.write_text(KUBE_AWS)
    bad = directory / os.fsdecode(b"bad\xfe.yaml")
    bad.write_text(KUBE_AWS.replace("nodes: 3", "nodes: three"))
    gone = directory / os.fsdecode(b"gone\xfd.yaml")

    def start(*args: str | Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen([*PADDLEGEN, *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, **env})

    def finish(child: subprocess.Popen[bytes]) -> subprocess.CompletedProcess[bytes]:
        stdout, stderr = child.communicate(timeout=60)
        assert b"Traceback" not in stderr, stderr
        stderr.decode("utf-8")  # strict: names come out escaped, not as raw bytes
        return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)

    # side by side (they only read, and the build writes only out/), but check, which reads
    # the built tree
    built, *results = map(finish, [
        start("build", good, "-o", directory / "out"), start("validate", good, bad, gone),
        start("validate", "--format", "json", bad), start("build", bad, "-o", "-"),
        start("explain", bad)])
    assert built.returncode == 0
    (directory / "out" / "RUNBOOK.md").write_text("edited by hand\n")
    results.append(finish(start("check", good, bad)))
    assert [result.returncode for result in results] == [2, 2, 2, 2, 2]
    for result in results[:1] + results[2:]:
        assert b"bad\\xfe.yaml" in result.stderr
    assert b"gone\\xfd.yaml" in results[0].stderr
    assert b"team\\xff/out is not what" in results[-1].stderr
