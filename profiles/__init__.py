"""Every profile, registered here and nowhere else.

A profile is one module of this package (model, target, rules, derivation, builders, files,
runbook, explanation; see paddlegen.compiler.profile) plus `<name>.yaml`, the defaults a spec is
merged onto.
"""

from __future__ import annotations

from typing import Any

from paddlegen.compiler.profile import Profile
from paddlegen.profiles import kube_aws, kube_up, local

PROFILES: dict[str, Profile[Any, Any]] = {
    profile.name: profile for profile in (kube_aws.PROFILE, kube_up.PROFILE, local.PROFILE)}
