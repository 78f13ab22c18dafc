"""A format is registered where it is defined: a profile's own grammar (the AWS ones live in
profiles/aws/formats.py) names what a value should be in a problem, as the shared ones do."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import ValidationError

from paddlegen.compiler.spec import describe
from paddlegen.profiles.aws import formats as aws_formats
from paddlegen.schema import patterns
from paddlegen.schema.models import SpecModel, text

# a grammar of this test's own, as a new profile would define one
TICKET = patterns.grammar(r"^T-[0-9]{4}$", "a ticket such as T-0042", 6)


class Ticketed(SpecModel):
    ticket: Annotated[str, text(TICKET)]


def message(value: str) -> str:
    with pytest.raises(ValidationError) as refused:
        Ticketed.model_validate({"ticket": value})
    [error] = refused.value.errors()
    return describe(error, None)


def test_a_grammar_defined_anywhere_names_itself_in_problems() -> None:
    assert message("T-42") == "'T-42' is not a ticket such as T-0042"
    assert message("T-00420") == ("'T-00420' is not a ticket such as T-0042 (7 characters; at "
                                  "most 6)")


def test_the_aws_grammars_live_with_the_aws_profiles_and_keep_their_words() -> None:
    assert not hasattr(patterns, "REGION") and not hasattr(patterns, "EFS_DNS_NAME")
    assert patterns.MEANING_BY_REGEX[aws_formats.REGION.regex] == "an AWS region such as us-west-2"
    assert patterns.MEANING_BY_REGEX[patterns.QUANTITY.regex] == patterns.QUANTITY.meaning
