"""Text made from templates: the profiles' runbooks (RUNBOOK.md).

A template is package data beside the module that fills it (`paddlegen.profiles/local.md.j2`
beside `paddlegen.profiles.local`), read through importlib.resources and compiled once per
process. The engine is Jinja2, set up so that:

- a value reaches a shell command only through the `q` filter (shlex.quote), the one place a
  template quotes anything;
- a missing value is an error, never an empty string: a name or attribute the context lacks
  (StrictUndefined), and a None printed or quoted, raise jinja2.UndefinedError;
- the text is the template's, byte for byte: no autoescaping, the final newline kept, and a line
  that holds only a block tag (`{% if %}`, `{% set %}`) leaves nothing behind.

Jinja2 is imported on the first render, not with this module: commands that write no runbook
(validate, explain, schema) never load it.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# The file name ending of a template: `<profile>.md.j2` (package data, see pyproject.toml).
SUFFIX = ".md.j2"


def render(package: str, name: str, context: Mapping[str, Any]) -> str:
    """The template `name` of `package` (package data beside its modules), filled from
    `context`. Raises jinja2.UndefinedError for a value the context lacks or holds as None."""
    # the environment compiles each template on its first use and keeps it (no auto_reload)
    return _environment().get_template(f"{package}:{name}").render(context)


def quote(value: object) -> str:
    """The `q` filter: `value` as one shell word. Text and whole numbers only: a None is a
    missing value, and a boolean or any other object has no one spelling in a shell."""
    if value is None:
        raise _undefined("a value to quote is None: the plan lacks it")
    if isinstance(value, bool) or not isinstance(value, str | int):
        str(value)  # an undefined value raises its own error here, naming what is missing
        raise TypeError(f"q quotes text or a whole number, not {type(value).__name__}")
    return shlex.quote(str(value))


def _present(value: Any) -> Any:
    """What every {{ expression }} passes through before it is written: None is refused."""
    if value is None:
        raise _undefined("a value in the template is None: the plan lacks it")
    return value


def _undefined(message: str) -> Exception:
    import jinja2

    return jinja2.UndefinedError(message)


def _source(name: str) -> tuple[str, str, Callable[[], bool]] | None:
    """The text of `<package>:<file>`, for Jinja2's loader; None if there is no such file."""
    package, _, file = name.partition(":")
    path = resources.files(package).joinpath(file)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return text, str(path), lambda: True  # package data does not change under a process


@cache
def _environment() -> jinja2.Environment:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(_source),
        undefined=jinja2.StrictUndefined,
        finalize=_present,
        autoescape=False,  # Markdown and shell, not HTML
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    environment.filters["q"] = quote
    return environment
