"""A corpus of broken specs: each is refused with exit 2 and one positioned line naming the problem.

Every `bad_specs/<name>.yaml` starts with `# expect: LINE:COL: PATH: SUBSTRING` (that comment is
line 1; PATH is empty for problems of the whole file). The few inputs that cannot carry a comment
(empty, huge, binary, non-UTF-8) are built in GENERATED below. Cases that show a known defect of
the tool are listed in KNOWN_BUGS and run as strict xfails, so fixing the tool flags them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from paddlegen.compiler.build import build
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.reference import rules_reference

from conftest import GOLDEN, run_cli

BAD_SPECS = Path(__file__).resolve().parent / "bad_specs"
EXPECT = re.compile(r"^# expect: (?P<line>\d+):(?P<col>\d+): (?P<path>[\w.\[\]]*): (?P<text>.+)$")
PROBLEM_LINE = re.compile(r"^.+:\d+:\d+: .+$")


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    line: int
    col: int
    path: str  # dotted spec path; "" for a problem of the whole file
    text: str  # part of the message that names the problem

    def prefix(self, filename: str) -> str:
        where = f"{filename}:{self.line}:{self.col}: "
        return where + (f"{self.path}: " if self.path else "")


def golden() -> bytes:
    return (GOLDEN / "kube-aws" / "spec.yaml").read_bytes()


def golden_with(old: bytes, new: bytes) -> bytes:
    raw = golden()
    assert raw.count(old) == 1, old
    return raw.replace(old, new)


def padded_to_3_mib() -> bytes:
    filler = b"# " + b"padding " * 12 + b"\n"
    return golden() + filler * ((3 << 20) // len(filler) + 1)


# name -> (bytes, "LINE:COL: PATH: SUBSTRING"); positions count lines of the golden spec as is.
GENERATED: dict[str, tuple[Callable[[], bytes], str]] = {
    "empty-file": (lambda: b"", "1:1: : file is empty"),
    "huge-file": (padded_to_3_mib, "1:1: : a spec may be at most 1048576"),
    "binary-png": (lambda: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01",
                   "1:1: : not UTF-8 text"),
    "non-utf8-latin1": (lambda: golden_with(b"keyName: paddle-keypair", b"keyName: paddle-k\xe9y"),
                        "15:20: : not UTF-8 text"),
    "nul-byte": (lambda: golden_with(b"nic: eth0", b"nic: eth\x000"), "36:11: : NUL byte"),
    "utf16-bom": (lambda: golden().decode("utf-8").encode("utf-16"), "1:1: : not UTF-8 text"),
    # 450 kB, under the size limit, but over 150,000 nodes: the node limit must apply quickly too
    "many-nodes-under-size-limit": (lambda: b"a: [" + b"x, " * 150_000 + b"x]\n",
                                    "1:1: : more than 10000 YAML nodes"),
    # Python refuses to convert more than 4300 digits; the loader stops long before
    "integer-of-5000-digits": (lambda: golden_with(b"port: 7164", b"port: " + b"7" * 5000),
                               "31:9: training.port: a number of 5000 characters"),
    "quantity-of-a-million-digits": (
        lambda: golden_with(b"capacity: 100Gi", b"capacity: '" + b"9" * 1_000_000 + b"'"),
        "24:13: storage.capacity: '999"),
    "log-period-10-to-the-100": (
        lambda: (GOLDEN / "local" / "spec.yaml").read_bytes().replace(
            b"logPeriod: 20", b"logPeriod: 1" + b"0" * 100),
        "17:14: training.logPeriod: a number of 101 characters"),
    "key-name-over-the-file-name-limit": (
        lambda: golden_with(b"keyName: paddle-keypair", b"keyName: " + b"k" * 252),
        "15:12: cluster.keyName: the private key's file name"),
}

# Cases where the tool is wrong today; strict, so a fix turns them into failures to un-mark.
KNOWN_BUGS: dict[str, str] = {}


def parse_expectation(text: str) -> tuple[int, int, str, str]:
    match = EXPECT.match(f"# expect: {text}")
    assert match, f"malformed expectation: {text!r}"
    return int(match["line"]), int(match["col"]), match["path"], match["text"]


def file_case(path: Path) -> Case:
    raw = path.read_bytes()
    first = raw.split(b"\n", 1)[0].decode("utf-8")
    assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: ...'"
    return Case(path.stem, raw, *parse_expectation(first.removeprefix("# expect: ")))


def all_cases() -> list[Case]:
    cases = [file_case(path) for path in sorted(BAD_SPECS.glob("*.yaml"))]
    cases += [Case(name, make(), *parse_expectation(expect))
              for name, (make, expect) in GENERATED.items()]
    return cases


CASES = all_cases()


def params() -> list[object]:
    def marks(name: str) -> list[pytest.MarkDecorator]:
        reason = KNOWN_BUGS.get(name)
        return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []

    return [pytest.param(case, id=case.name, marks=marks(case.name)) for case in CASES]


def test_corpus_is_complete() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 45
    assert len(set(names)) == len(names)
    assert set(KNOWN_BUGS) <= set(names)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in names)


@pytest.mark.parametrize("case", params())
def test_bad_spec_is_refused_with_its_position(case: Case, tmp_path: Path) -> None:
    spec = BAD_SPECS / f"{case.name}.yaml"
    if case.name in GENERATED:
        spec = tmp_path / f"{case.name}.yaml"
        spec.write_bytes(case.raw)

    with pytest.raises(SpecError) as raised:
        build(case.raw, str(spec))
    assert str(raised.value.problems[0]).startswith(case.prefix(str(spec)))
    documented = rules_reference()
    assert all(f"| `{p.rule}` |" in documented for p in raised.value.problems)

    out = tmp_path / "out"
    result = run_cli("build", spec, "-o", out)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines, "nothing on stderr"
    assert lines[0].startswith(case.prefix(str(spec))), lines[0]
    assert case.text in lines[0], lines[0]
    assert all(PROBLEM_LINE.match(line) for line in lines), result.stderr  # others may follow
    assert not out.exists()
