"""The day paddlegen takes for today: the calendar's (UTC), or the one SOURCE_DATE_EPOCH names.

SOURCE_DATE_EPOCH is the reproducible-builds convention
(https://reproducible-builds.org/specs/source-date-epoch/): its value "MUST be an ASCII
representation of an integer with no fractional component, identical to the output format of
date +%s", and "if the value is malformed, the build process SHOULD exit with a non-zero error
code". So a malformed value is an error of the environment, found here as a value (BadEpoch)
and refused by the command line before any command runs (exit 2, one line), never a traceback.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from paddlegen.compiler.problems import quoted

VARIABLE = "SOURCE_DATE_EPOCH"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# The seconds Python's dates hold: the years 1 to 9999.
FIRST = (datetime.min.replace(tzinfo=timezone.utc) - _EPOCH) // timedelta(seconds=1)
LAST = (datetime.max.replace(tzinfo=timezone.utc) - _EPOCH) // timedelta(seconds=1)
# ASCII digits only: str.isdigit() and int() also take '٣' (ARABIC-INDIC DIGIT THREE), and
# isdigit() '²', which int() refuses. `date +%s` prints a '-' before 1970.
_INTEGER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class BadEpoch:
    """A SOURCE_DATE_EPOCH that names no time, and why."""

    value: str
    reason: str

    def __str__(self) -> str:
        return (f"{VARIABLE}={quoted(self.value)}: not a time in seconds since 1970 "
                f"({self.reason})")


def source_date(environ: Mapping[str, str] = os.environ) -> date | BadEpoch | None:
    """The day (UTC) SOURCE_DATE_EPOCH names; None if it is unset or empty (the calendar's day
    then); a BadEpoch if it is malformed or out of the years 1 to 9999."""
    value = environ.get(VARIABLE, "")
    if value == "":
        return None
    if not _INTEGER.fullmatch(value):
        return BadEpoch(value, "it takes an integer of ASCII digits, as `date +%s` prints it")
    # the length first: int() of thousands of digits is refused, and slow before that
    seconds = int(value) if len(value) <= len(str(FIRST)) + 1 else None
    if seconds is None or not FIRST <= seconds <= LAST:
        # `date +%s%3N` and JavaScript's Date.now(): 13 digits since 2001
        milliseconds = seconds is not None and seconds >= 10**12
        return BadEpoch(value, f"it is outside the years 1 to 9999, {FIRST} to {LAST}"
                               f"{'; milliseconds? it counts seconds' if milliseconds else ''}")
    return (_EPOCH + timedelta(seconds=seconds)).date()


def today(environ: Mapping[str, str] = os.environ) -> str:
    """The ISO date of the day SOURCE_DATE_EPOCH names, or of the calendar's day (UTC). A
    malformed value raises ValueError: the command line refuses it before it gets here."""
    named = source_date(environ)
    if isinstance(named, BadEpoch):
        raise ValueError(str(named))
    return (named or datetime.now(timezone.utc).date()).isoformat()
