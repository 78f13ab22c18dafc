"""What a terminal shows of paddlegen's output is what paddlegen wrote: `explain` and `validate`,
run in a real terminal (a tmux pane) on specs whose values and file names hold escape sequences
(CSI cursor moves and erases, OSC window title, OSC 52 clipboard), print them as text. The
screen equals the bytes written to the terminal, the bytes hold no ESC, and nothing reached the
terminal's state (its title, its clipboard)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import GOLDEN

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install tmux)")

WIDTH, HEIGHT = 200, 50
DONE = "paddlegen-terminal-test-done"  # printed after the command: all its output is in
BOUND_SECONDS = 60.0  # for tmux to have read, drawn and piped the pane's last bytes
# An argument that, written raw, moves the cursor back over itself and erases it: the screen
# would show every trainer's command ending in `--out /mnt/shared/linear/output`.
HIDDEN_ARG = "--resume-from=s3://attacker/evil.pdparams\x1b[43D\x1b[K"
TITLE, CLIPBOARD = "\x1b]0;pwned\x07", "\x1b]52;c;ZXZpbA==\x07"  # OSC 0 and OSC 52


@dataclass(frozen=True)
class Shown:
    screen: list[str]  # the pane's lines, its history too, wrapped lines joined
    written: bytes  # what the program wrote to the terminal
    title: str
    buffers: str  # tmux's paste buffers: what OSC 52 would have set


def lines_of(text: str) -> list[str]:
    """Lines as the screen holds them: no line ends, trailing blanks and lines dropped, up to
    the sentinel."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    lines = lines[:lines.index(DONE)] if DONE in lines else lines
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Callable[[list[str]], Shown]]:
    """Runs a command in a new tmux server's pane, WIDTH x HEIGHT, and returns what it shows."""
    assert TMUX is not None
    # a server of its own, its socket at a short path (a socket's path has at most 107 bytes)
    sockets = Path(tempfile.mkdtemp(prefix="paddlegen-tmux-"))
    socket = sockets / "s"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8",
           "HOME": str(tmp_path)}

    def tmux(*args: str) -> str:
        return subprocess.run([TMUX, "-u", "-f", "/dev/null", "-S", str(socket), *args],
                              env=env, check=True, capture_output=True, text=True,
                              timeout=BOUND_SECONDS).stdout

    def run(argv: list[str]) -> Shown:
        written = tmp_path / "written.bytes"
        me = shlex.join([TMUX, "-S", str(socket)])
        # the pane waits until its bytes are piped, runs the command, prints the sentinel and
        # says it is done; a signal sent before the wait is kept (tmux's wait-for)
        script = (f"{me} wait-for go; {shlex.join(argv)}; printf '%s\\n' {DONE}; "
                  f"{me} wait-for -S done; exec sleep {BOUND_SECONDS:.0f}")
        tmux("new-session", "-d", "-x", str(WIDTH), "-y", str(HEIGHT), "-c", str(tmp_path),
             "sh", "-c", script)
        tmux("pipe-pane", "-o", f"cat >> {shlex.quote(str(written))}")
        tmux("wait-for", "-S", "go")
        tmux("wait-for", "done")
        # the command has ended; tmux reads, draws and pipes the pane's bytes on its own time
        deadline = time.monotonic() + BOUND_SECONDS
        while True:
            screen = tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-")
            piped = written.read_bytes() if written.exists() else b""
            if DONE in screen.split("\n") and DONE.encode() in piped:
                break
            assert time.monotonic() < deadline, f"no {DONE} after {BOUND_SECONDS} s: {screen}"
            time.sleep(0.05)
        return Shown(lines_of(screen), piped[:piped.index(DONE.encode())],
                     tmux("display-message", "-p", "#{pane_title}"), tmux("list-buffers"))

    try:
        yield run
    finally:
        subprocess.run([TMUX, "-S", str(socket), "kill-server"], env=env, check=False,
                       capture_output=True, timeout=BOUND_SECONDS)
        shutil.rmtree(sockets, ignore_errors=True)


def paddlegen(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "paddlegen.compiler", *map(str, args)]


def assert_shown_as_written(shown: Shown) -> None:
    """The screen is the bytes, as text: nothing in them acted on the terminal."""
    assert b"\x1b" not in shown.written and b"\x07" not in shown.written
    assert shown.screen == lines_of(shown.written.decode("utf-8"))
    assert "pwned" not in shown.title and shown.buffers == ""


def test_explain_shows_a_hidden_argument_in_full(terminal: Callable[[list[str]], Shown],
                                                 tmp_path: Path) -> None:
    args = ["--out", "/mnt/shared/linear/output", TITLE + CLIPBOARD, HIDDEN_ARG]
    (tmp_path / "spec.yaml").write_text((GOLDEN / "kubernetes" / "spec.yaml").read_text().replace(
        "args: [--out, /mnt/shared/linear/output]", f"args: {json.dumps(args)}"))
    shown = terminal(paddlegen("explain", "spec.yaml"))
    assert_shown_as_written(shown)
    commands = [line for line in shown.screen if "/workspace/train_linear.py" in line]
    assert len(commands) == 5  # the command row, and each of the 4 pods'
    for line in commands:
        assert line.endswith(" --out /mnt/shared/linear/output "
                             "$'\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07' "
                             "$'--resume-from=s3://attacker/evil.pdparams\\x1b[43D\\x1b[K'")


def test_validate_shows_keys_values_and_file_names_as_text(
        terminal: Callable[[list[str]], Shown], tmp_path: Path) -> None:
    spec = (GOLDEN / "kubernetes" / "spec.yaml").read_text()
    hostile = spec.replace("kind: TrainingJob\n", "kind: TrainingJob\n"
                           f"{json.dumps('bogus' + TITLE + CLIPBOARD)}: 1\n").replace(
        "namespace: ml-team", f"namespace: {json.dumps('ml' + TITLE + '-team')}")
    name = "spec\x1b[2J\x1b[H.yaml"  # clear the screen, cursor home
    (tmp_path / name).write_text(hostile)
    shown = terminal(paddlegen("validate", name))
    assert_shown_as_written(shown)
    assert shown.screen[0].startswith(
        "spec\\x1b[2J\\x1b[H.yaml:6:1: bogus\\x1b]0;pwned\\x07\\x1b]52;c;ZXZpbA==\\x07: "
        "unknown key;")
    assert any("'ml\\x1b]0;pwned\\x07-team'" in line for line in shown.screen)
