"""Deterministic text for the artifacts: block YAML in insertion order, and JSON."""

from __future__ import annotations

import io
import json
from functools import cache
from typing import Any

_STR = "tag:yaml.org,2002:str"


class Quoted(str):
    """A string written double-quoted (kube-aws's own cluster.yaml template quotes the ARN)."""


class Block(str):
    """A multi-line string written as a literal block, as it reads (embedded JSON, scripts)."""


@cache
def _dumper() -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import ScalarNode
    from ruamel.yaml.resolver import VersionedResolver

    yaml11 = VersionedResolver(version=(1, 1))

    def represent_str(representer: Any, data: str) -> Any:
        # kubectl and kube-aws read YAML 1.1, where yes/on/no/off are booleans: quote those too.
        style: str | None
        if isinstance(data, Quoted):
            style = '"'
        elif isinstance(data, Block) and "\n" in data:
            style = "|"
        elif yaml11.resolve(ScalarNode, data, (True, False)) != _STR:
            style = "'"
        else:
            style = None
        return representer.represent_scalar(_STR, str(data), style=style)

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    # the builders' key order is the output's (the attribute's stub says None)
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold long values
    yaml.representer.ignore_aliases = lambda _data: True  # shared values: write them out again
    yaml.representer.add_representer(str, represent_str)
    yaml.representer.add_representer(Quoted, represent_str)
    yaml.representer.add_representer(Block, represent_str)
    return yaml


def to_yaml(data: Any) -> str:
    stream = io.StringIO()
    _dumper().dump(data, stream)
    return stream.getvalue()


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def yaml_stream(documents: list[str]) -> str:
    """Several rendered YAML documents as one multi-document stream."""
    return "".join(f"---\n{document}" for document in documents)
