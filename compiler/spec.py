"""YAML bytes to a validated spec: load, merge onto the profile, validate, check rules."""

from __future__ import annotations

import difflib
import json
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from paddlegen.compiler.loader import Document, Path, load_text
from paddlegen.compiler.problems import Problem, SpecError, dotted
from paddlegen.compiler.profile import Profile
from paddlegen.profiles import PROFILES
from paddlegen.schema.models import SpecBase
from paddlegen.schema.patterns import MEANING_BY_REGEX


@cache
def profile_document(name: str) -> Document:
    """The profile's defaults (package data: paddlegen.profiles/<name>.yaml)."""
    data = resources.files("paddlegen.profiles").joinpath(PROFILES[name].defaults_file)
    return load_text(data.read_bytes(), f"profiles/{name}.yaml")


def schema_text() -> str:
    """The JSON Schema of a spec as written: fields every profile fills in are optional."""
    from paddlegen.schema.json_schema import user_schema

    models = [(name, profile.model, profile_document(name).data)
              for name, profile in PROFILES.items()]
    return json.dumps(user_schema(models), indent=2, ensure_ascii=False) + "\n"


class ValidSpec(NamedTuple):
    profile: Profile[Any, Any]
    spec: SpecBase
    warnings: tuple[Problem, ...]


def load_spec(raw: bytes, filename: str, strict: bool = False,
              kube_version: str | None = None) -> ValidSpec:
    """Validate a spec file's bytes; raise SpecError with every problem found.

    Warnings are returned, or with `strict` raised as errors. `kube_version` overrides the
    spec's kubeVersion (the command line's --kube-version)."""
    document = load_text(raw, filename)
    name = document.data.get("profile")
    if not isinstance(name, str) or name not in PROFILES:
        raise SpecError([profile_problem(document, name)])
    profile = PROFILES[name]
    merged = merge(profile_document(name), document)
    spec = validate(merged, profile.model)
    if kube_version:
        spec = spec.model_copy(update={"kube_version": kube_version})
    problems = [Problem(merged.position(path), dotted(path), rule.name, message,
                        "error" if strict else rule.severity)
                for rule in profile.rules for path, message in rule.check(spec)]
    if any(p.severity == "error" for p in problems):
        raise SpecError(problems)
    return ValidSpec(profile, spec, tuple(problems))


def profile_problem(document: Document, profile: object) -> Problem:
    choices = ", ".join(PROFILES)
    if profile is None and "profile" not in document.data:
        return Problem(document.position(()), "profile", "required", f"missing; one of {choices}")
    message = f"{profile!r} is not a profile; one of {choices}{did_you_mean(profile, PROFILES)}"
    return Problem(document.position(("profile",)), "profile", "bad-value", message)


def merge(base: Document, override: Document) -> Document:
    """`override` deep-merged onto `base`: mappings merge, everything else replaces."""
    def merged(a: Any, b: Any) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            return {**a, **{key: merged(a[key], value) if key in a else value
                            for key, value in b.items()}}
        return b

    # positions of replaced profile values are never looked up: the spec's shadow them
    return Document(merged(base.data, override.data), {**base.values, **override.values},
                    {**base.keys, **override.keys}, {**base.texts, **override.texts})


def validate(document: Document, model: type[SpecBase]) -> SpecBase:
    from pydantic import ValidationError

    try:
        return model.model_validate(document.data)
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
    rule = next((name for name, kinds in PYDANTIC_RULES.items() if kind in kinds), "bad-value")
    return Problem(document.position(path), dotted(path), rule,
                   describe(error, document.texts.get(path)))


# The schema's rules (for the reference) and the pydantic error types each one covers.
SCHEMA_RULES = {
    "unknown-key": "A key the spec does not define (with a did-you-mean hint).",
    "required": "A key the profile does not fill in and the spec leaves out.",
    "wrong-type": "A value of the wrong type: a string for a number, a number for a string "
                  "(quote account ids), a list for a mapping.",
    "out-of-range": "A number outside its field's range (ports 1-65535, nodes at least 1, ...).",
    "bad-format": "A string that does not follow its field's grammar (names, regions, ARNs, "
                  "quantities, images, paths).",
    "bad-value": "A value that is not one of the allowed ones (apiVersion, kind, profile).",
}
PYDANTIC_RULES = {
    "wrong-type": {"string_type", "int_type", "bool_type", "model_type", "dict_type",
                   "model_attributes_type", "int_from_float", "float_type"},
    "out-of-range": {"greater_than", "greater_than_equal", "less_than", "less_than_equal"},
    "bad-format": {"string_pattern_mismatch", "string_too_short", "string_too_long"},
}


def describe(error: Any, source: str | None) -> str:
    """pydantic's message, with the grammar's meaning for pattern errors and the offending value;
    `source` is the value as written, when YAML read it as something other than a string."""
    kind, value = error["type"], error.get("input")
    if kind == "string_pattern_mismatch":
        meaning = MEANING_BY_REGEX.get(error["ctx"]["pattern"], "the field's pattern")
        return f"{value!r} is not {meaning}"
    message = str(error["msg"][0].lower() + error["msg"][1:])
    if kind == "string_type" and source is not None and not isinstance(value, (dict, list)):
        lost = "; YAML dropped its leading zero" if source.startswith("0") and source != "0" else ""
        return (f"{message}: write {json.dumps(source)} in quotes; unquoted, YAML reads "
                f"{json.dumps(value)}{lost}")
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
