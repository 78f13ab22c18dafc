"""Every profile, registered here and nowhere else.

A profile is one module of this package (model, target, rules, derivation, builders, files,
runbook, explanation; see paddlegen.compiler.profile) plus `<name>.yaml`, the defaults a spec is
merged onto.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import Any

from paddlegen.compiler.profile import Profile

# Profile name -> its module in this package.
MODULES = {"kube-aws": "kube_aws", "kube-up": "kube_up", "local": "local", "eks": "eks",
           "kubernetes": "kubernetes"}


class _Registry(Mapping[str, "Profile[Any, Any]"]):
    """The profiles by name. A module is imported when its profile is first asked for: a run
    compiles specs of one profile, mostly, and need not import the others."""

    def __getitem__(self, name: str) -> Profile[Any, Any]:
        profile: Profile[Any, Any] = import_module(f"{__name__}.{MODULES[name]}").PROFILE
        return profile

    def __contains__(self, name: object) -> bool:
        return name in MODULES

    def __iter__(self) -> Iterator[str]:
        return iter(MODULES)

    def __len__(self) -> int:
        return len(MODULES)


PROFILES: Mapping[str, Profile[Any, Any]] = _Registry()
