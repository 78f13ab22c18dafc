"""YAML bytes to a validated spec: load, merge onto the profile, validate, check rules."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from importlib import resources
from pathlib import PurePath
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel

from paddlegen.compiler.loader import Document, load_text
from paddlegen.compiler.problems import (
    FieldPath,
    Problem,
    SpecError,
    did_you_mean,
    dotted,
    elided,
    quoted,
)
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


# A URL's scheme (https:, file:); two letters at least, so that C: is a drive, not a scheme.
URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def modeline(schema: str, spec_dir: PurePath) -> str:
    """The first line of a spec written in `spec_dir`, which names its JSON Schema for
    yaml-language-server. `schema` is a URL, or a path from the current directory, where
    `paddlegen schema > paddlegen.schema.json` writes it; the server reads a relative path from
    the spec's directory, so the line names the schema from there (jobs/a/spec.yaml:
    ../../paddlegen.schema.json)."""
    if not URL_SCHEME.match(schema) and not PurePath(schema).is_absolute():
        schema = PurePath(os.path.relpath(schema, spec_dir)).as_posix()
    return f"# yaml-language-server: $schema={schema}\n"


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
    spec, problems, invalid = validate(merged, profile.model)
    if kube_version:
        spec = spec.model_copy(update={"kube_version": kube_version})
    # On a spec with schema errors, its invalid fields are missing (or defaulted): a rule that
    # reads one cannot be evaluated, and is not run.
    problems += [Problem(merged.position(path), dotted(path), rule.name, message,
                         "error" if strict else rule.severity)
                 for rule in profile.rules if not rule.reads_any(invalid)
                 for path, message in rule.check(spec)]
    unfilled = placeholders(document)
    if unfilled:  # what else is wrong there follows from the placeholder
        paths = {p.path for p in unfilled}
        problems = unfilled + [p for p in problems if p.path not in paths]
    problems = without_contradicted_warnings(problems)
    if any(p.severity == "error" for p in problems):
        raise SpecError(problems)
    return ValidSpec(profile, spec, tuple(problems))


def without_contradicted_warnings(problems: list[Problem]) -> list[Problem]:
    """Problems less the warnings about a field that has an error (or about a part or a whole
    of one), from the schema or another rule: advice on a value that is wrong is noise."""
    errors = [p.path for p in problems if p.severity == "error"]

    def related(a: str, b: str) -> bool:
        return a == b or a.startswith(f"{b}.") or b.startswith(f"{a}.")

    return [p for p in problems if p.severity == "error"
            or not any(related(p.path, error) for error in errors)]


PLACEHOLDER = re.compile(r"<([^<>\n]+)>")


def placeholders(document: Document) -> list[Problem]:
    """A problem for each value still written as a placeholder, `<what to put here>` (as the
    starters of `paddlegen init` write them)."""
    found = []
    pending: list[tuple[FieldPath, Any]] = [((), document.data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, dict):
            pending += [((*path, key), item) for key, item in value.items()]
        elif isinstance(value, list):
            pending += [((*path, index), item) for index, item in enumerate(value)]
        elif isinstance(value, str) and (match := PLACEHOLDER.fullmatch(value.strip())):
            found.append(Problem(document.position(path), dotted(path), "placeholder",
                                 f"still a placeholder: put {elided(match[1])} here"))
    return found


def profile_problem(document: Document, profile: object) -> Problem:
    choices = ", ".join(PROFILES)
    if profile is None and "profile" not in document.data:
        return Problem(document.position(()), "profile", "required", f"missing; one of {choices}")
    message = (f"{quoted(profile)} is not a profile; one of "
               f"{choices}{did_you_mean(profile, PROFILES)}")
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


class Validated(NamedTuple):
    spec: SpecBase
    problems: list[Problem]
    # where the schema errors are, but for unknown keys (which leave the fields beside them
    # valid): no rule that reads there runs
    invalid: list[FieldPath]


def validate(document: Document, model: type[SpecBase]) -> Validated:
    """The spec, or, with a problem for each schema error, a spec of the fields that are valid
    (the others missing), so that the rules that can still be evaluated are."""
    from pydantic import ValidationError

    try:
        return Validated(model.model_validate(document.data), [], [])
    except ValidationError as error:
        errors = error.errors()
    partial = valid_part(model, document.data)
    assert isinstance(partial, SpecBase)
    return Validated(partial, [pydantic_problem(document, model, e) for e in errors],
                     [tuple(e["loc"]) for e in errors if e["type"] != "extra_forbidden"])


def valid_part(model: type[BaseModel], data: Any) -> BaseModel:
    """`model` built from the fields of `data` that are valid one by one, without validation
    of the whole (so rules across fields see what they can)."""
    from pydantic import ValidationError

    prepared = getattr(model, "prepared", None)  # what a model infers before validating
    if prepared is not None and isinstance(data, dict):
        data = prepared(data)
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if not isinstance(data, dict) or key not in data:
            continue
        submodel = next((arg for arg in _members(field.annotation)
                         if isinstance(arg, type) and issubclass(arg, BaseModel)), None)
        if submodel is not None:
            if isinstance(data[key], dict):
                fields[name] = valid_part(submodel, data[key])
            continue
        try:
            fields[name] = field_adapter(model, name).validate_python(data[key])
        except ValidationError:
            continue
    return model.model_construct(**fields)


@cache
def field_adapter(model: type[BaseModel], name: str) -> Any:
    """A validator of one field alone, with its constraints and the model's strictness."""
    from pydantic import ConfigDict, TypeAdapter

    field = model.model_fields[name]
    config = ConfigDict(strict=model.model_config.get("strict", False),
                        regex_engine=model.model_config.get("regex_engine", "rust-regex"))
    constrained: Any = field.annotation
    if field.metadata:  # Annotated[annotation, *metadata], as Python 3.10 can write it
        constrained = Annotated.__class_getitem__((constrained, *field.metadata))  # type: ignore[attr-defined]
    return TypeAdapter(constrained, config=config)


def pydantic_problem(document: Document, model: type[SpecBase], error: Any) -> Problem:
    path: FieldPath = tuple(error["loc"])
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
    "placeholder": "A value still written as a placeholder, `<what to put here>`, as the "
                   "starters of `paddlegen init` write what only you know.",
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
    kind, value, context = error["type"], error.get("input"), error.get("ctx", {})
    if kind in ("string_pattern_mismatch", "string_too_long") and "pattern" in context:
        meaning = MEANING_BY_REGEX.get(context["pattern"], "the field's pattern")
        if kind == "string_too_long":  # refused before its pattern was tried (schema/models.py)
            return (f"{quoted(value)} is not {meaning} ({len(value)} characters; at most "
                    f"{context['max_length']})")
        return f"{quoted(value)} is not {meaning}"
    if kind in ("too_short", "too_long") and isinstance(value, (list, dict)):
        bound = context.get("min_length" if kind == "too_short" else "max_length")
        items = plural(bound, "item")
        return (f"needs at least {items}, not {len(value)}" if kind == "too_short"
                else f"takes at most {items}, not {len(value)}")
    message = str(error["msg"][0].lower() + error["msg"][1:])
    if kind == "string_type" and source is not None and not isinstance(value, (dict, list)):
        lost = "; YAML dropped its leading zero" if source.startswith("0") and source != "0" else ""
        return (f"{message}: write {elided(json.dumps(source))} in quotes; unquoted, YAML reads "
                f"{elided(json.dumps(value))}{lost}")
    if isinstance(value, (dict, list)):
        return message
    return f"{message} (got {quoted(value)})"


def plural(count: object, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def field_names(model: Any, path: FieldPath) -> list[str]:
    """The keys allowed in the mapping at `path` of `model`, by walking the models."""
    for part in path:
        if isinstance(part, int):
            continue
        field = next(f for name, f in model.model_fields.items() if (f.alias or name) == part)
        model = next(arg for arg in _members(field.annotation) if hasattr(arg, "model_fields"))
    return [field.alias or name for name, field in model.model_fields.items()]


def _members(annotation: Any) -> tuple[Any, ...]:
    return getattr(annotation, "__args__", None) or (annotation,)
