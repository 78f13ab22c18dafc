"""YAML bytes to a validated TrainingSpec: load, merge onto the profile, validate, check rules."""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Any

from paddlegen.compiler.loader import Document, Path, load_text
from paddlegen.compiler.problems import Problem, SpecError, dotted
from paddlegen.schema import PROFILES, SPEC_MODELS, TrainingSpec
from paddlegen.schema.models import SpecBase
from paddlegen.schema.patterns import MEANING_BY_REGEX


def profile_file(name: str) -> Any:
    return resources.files("paddlegen.profiles").joinpath(f"{name}.yaml")


@cache
def profile_document(name: str) -> Document:
    return load_text(profile_file(name).read_bytes(), f"profiles/{name}.yaml")


def schema_text() -> str:
    """The JSON Schema of a spec as written: fields every profile fills in are optional."""
    from paddlegen.schema.json_schema import user_schema

    defaults = {name: profile_document(name).data for name in PROFILES}
    return json.dumps(user_schema(defaults), indent=2, ensure_ascii=False) + "\n"


def load_spec(raw: bytes, filename: str) -> tuple[TrainingSpec, Document]:
    """Validate a spec file's bytes; raise SpecError with every problem found."""
    from paddlegen.compiler.rules import check_rules

    document = load_text(raw, filename)
    profile = document.data.get("profile")
    if profile not in PROFILES:
        raise SpecError([profile_problem(document, profile)])
    merged = merge(profile_document(profile), document)
    spec = validate(merged, SPEC_MODELS[profile])
    problems = [problem(merged, path, rule, message) for path, rule, message in check_rules(spec)]
    if problems:
        raise SpecError(problems)
    return spec, merged


def profile_problem(document: Document, profile: object) -> Problem:
    choices = ", ".join(PROFILES)
    if profile is None and "profile" not in document.data:
        return Problem(document.position(()), "profile", "required", f"missing; one of {choices}")
    message = f"{profile!r} is not a profile; one of {choices}{did_you_mean(profile, PROFILES)}"
    return Problem(document.position(("profile",)), "profile", "enum", message)


def merge(base: Document, override: Document) -> Document:
    """`override` deep-merged onto `base`: mappings merge, everything else replaces."""
    def merged(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {**a, **{key: merged(a[key], value) if key in a else value
                            for key, value in b.items()}}
        return b

    # positions of replaced profile values are never looked up: the spec's shadow them
    return Document(merged(base.data, override.data), {**base.values, **override.values},
                    {**base.keys, **override.keys})


def validate(document: Document, model: type[SpecBase]) -> TrainingSpec:
    from pydantic import ValidationError

    try:
        return model.model_validate(document.data)  # type: ignore[return-value]
    except ValidationError as error:
        raise SpecError(pydantic_problem(document, model, e) for e in error.errors()) from None


def pydantic_problem(document: Document, model: type[SpecBase], error: Any) -> Problem:
    path: Path = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden":
        known = field_names(model, path[:-1])
        hint = did_you_mean(path[-1], known)
        return Problem(document.key_position(path), dotted(path), "unknown-key",
                       f"unknown key{hint or '; expected one of ' + ', '.join(sorted(known))}")
    if kind == "missing":
        return Problem(document.key_position(path[:-1]), dotted(path), "required",
                       "required key is missing")
    return problem(document, path, kind, describe(error))


def problem(document: Document, path: Path, rule: str, message: str) -> Problem:
    return Problem(document.position(path), dotted(path), rule, message)


def describe(error: Any) -> str:
    """pydantic's message, with the grammar's meaning for pattern errors and the offending value."""
    kind, value = error["type"], error.get("input")
    if kind == "string_pattern_mismatch":
        meaning = MEANING_BY_REGEX.get(error["ctx"]["pattern"], "the field's pattern")
        return f"{value!r} is not {meaning}"
    message = error["msg"][0].lower() + error["msg"][1:]
    if kind == "string_type" and isinstance(value, int) and not isinstance(value, bool):
        return f"{message}: quote it (\"{value}\"); unquoted, YAML reads a number"
    if isinstance(value, (dict, list)):
        return message
    return f"{message} (got {value!r})"


def field_names(model: Any, path: Path) -> list[str]:
    """The keys allowed in the mapping at `path` of `model`, by walking the models."""
    for part in path:
        if isinstance(part, int):
            continue
        field = next(f for name, f in model.model_fields.items() if (f.alias or name) == part)
        model = next(arg for arg in _members(field.annotation) if hasattr(arg, "model_fields"))
    return [field.alias or name for name, field in model.model_fields.items()]


def _members(annotation: Any) -> tuple[Any, ...]:
    return getattr(annotation, "__args__", None) or (annotation,)


def did_you_mean(word: object, choices: Any) -> str:
    close = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
