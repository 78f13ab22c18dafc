"""The `paddlegen` command's entry point (also `python -m paddlegen.compiler`).

It imports nothing heavy before it has taken SIGINT over, so a Ctrl-C at any moment ends the
command with exit code 130 and one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130


class Interrupted(BaseException):
    """Ctrl-C. Not a KeyboardInterrupt, which click turns into "Aborted!" and exit code 1."""


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted


def main() -> None:
    signal.signal(signal.SIGINT, _interrupt)
    try:
        from paddlegen.compiler.cli import app

        app(prog_name="paddlegen")
    except Interrupted:
        with contextlib.suppress(OSError):  # no stderr to say it on
            os.write(2, b"paddlegen: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
