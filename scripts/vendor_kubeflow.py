"""Regenerate the strict JSON Schema of Kubeflow's PaddleJob (kubeflow.org/v1) in schema/kubeflow/
from its CRD (a maintainer tool, not part of the package; run by hand, never at build time):

    python scripts/vendor_kubeflow.py kubeflow.org_paddlejobs.yaml

The argument is the CRD file `manifests/base/crds/kubeflow.org_paddlejobs.yaml` of the
training-operator release named in schema/kubeflow/ORIGIN.md. Its sha256 must be the one pinned
below (and in ORIGIN.md), or nothing is written; `--new-source` accepts another file (a refresh:
then update the pin, ORIGIN.md and the output's sha256 there).

Writes schema/kubeflow/paddlejob-kubeflow-v1.json (or the path given with `--output`): the
CRD's `openAPIV3Schema` of version v1, made strict the way kubernetes-validate's schemas are
strict, as ORIGIN.md describes. With --check nothing is written: it says whether the file is what
it would write, and exits 1 if not. Needs ruamel.yaml, and jsonschema to check what it writes.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import Any

from vendoring import (
    CrdKind,
    Pin,
    Schema,
    VendorError,
    check_pin,
    checked,
    compact,
    crd_kind_schema,
    load_crd,
    out_of_date,
    report,
)

CRD_PIN = Pin("kubeflow/training-operator v1.9.4, manifests/base/crds/kubeflow.org_paddlejobs.yaml",
              "084d0d3e427f309c9b9e91322f6f02786648ccc0b8eadedc3d5ece46ef5a55ce")

CRD_NAME = "paddlejobs.kubeflow.org"
GROUP = "kubeflow.org"
VERSION = "v1"
KIND = "PaddleJob"

PADDLEJOB = CrdKind(CRD_PIN, "kubeflow.org_paddlejobs.yaml", CRD_NAME, GROUP, VERSION, KIND,
                    directory="kubeflow", script="scripts/vendor_kubeflow.py")
OUTPUT = PADDLEJOB.output  # schema/kubeflow/paddlejob-kubeflow-v1.json

# The walk over the CRD's keywords (which stops on any it does not know), what is made strict and
# how, are scripts/vendoring.py's, shared with scripts/vendor_crds.py.


def build(crd: Any, crd_sha256: str) -> Schema:
    """The strict schema of version v1 of the PaddleJob CRD."""
    return crd_kind_schema(crd, PADDLEJOB, crd_sha256)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crd", type=Path, help="the CRD file kubeflow.org_paddlejobs.yaml")
    parser.add_argument("--output", type=Path, default=OUTPUT,
                        help="where to write the schema (default: "
                             "schema/kubeflow/paddlejob-kubeflow-v1.json)")
    parser.add_argument("--new-source", action="store_true",
                        help="accept a CRD whose sha256 is not the pinned one (a refresh)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file is not what would be written")
    args = parser.parse_args(argv)

    try:
        digest = check_pin(args.crd, CRD_PIN, accept_other=args.new_source)
    except VendorError as error:
        print(f"{error}; pass --new-source to use it", file=sys.stderr)
        return 1
    try:
        text = compact(checked(build(load_crd(args.crd), digest)))
    except VendorError as error:
        print(f"{args.crd.name}: {error}", file=sys.stderr)
        return 1
    if args.check:
        return report(out_of_date({args.output: text}, ()), 1)
    args.output.write_text(text, encoding="utf-8", newline="\n")
    out_digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    print(f"CRD sha256 {digest}\nwrote {args.output.name}: {len(text.encode())} bytes, "
          f"sha256 {out_digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
