"""The `paddlegen` command's entry point (also `python -m paddlegen.compiler`).

It imports nothing heavy before it has taken SIGINT over, so a Ctrl-C at any moment ends the
command with exit code 130 and one line, never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
from types import FrameType
from typing import NoReturn

EXIT_INTERRUPTED = 130
MAIN_PID = os.getpid()  # a forked worker shares the handler until it sets its own


def exit_interrupted(signum: int, frame: FrameType | None) -> NoReturn:
    """Ctrl-C: one line, exit 130, at once. An exception raised here would surface wherever the
    signal lands, even inside a library that wraps it (pydantic-core makes it a SchemaError);
    leaving at once is safe, since the writer survives a crash at any point (its journal)."""
    if os.getpid() == MAIN_PID:
        with contextlib.suppress(OSError):  # no stderr to say it on
            os.write(2, b"paddlegen: interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def main() -> None:
    signal.signal(signal.SIGINT, exit_interrupted)
    # No pydantic plugin has any business with paddlegen's own models, and looking for them
    # reads the metadata of every installed distribution on every start.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from paddlegen.compiler.cli import app

    app(prog_name="paddlegen")


if __name__ == "__main__":
    main()
