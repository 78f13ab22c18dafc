"""Regenerate the strict JSON Schemas of the custom resources of JobSet, Kubeflow Trainer v2 and
Kueue in schema/jobset/, schema/trainer/ and schema/kueue/ from their CRDs (a maintainer tool,
not part of the package; run by hand, never at build time):

    python scripts/vendor_crds.py jobset.x-k8s.io_jobsets.yaml kueue.x-k8s.io_localqueues.yaml ...

Each argument is one of the CRD files listed in KINDS below, known by its name in its release
(`config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml` of JobSet v0.12.0, for one); each
directory's ORIGIN.md names the release, its commit and how to get the files. A file's sha256
must be the one pinned below (and in ORIGIN.md), or nothing is written; `--new-source` accepts
another file (a refresh: then update the pin, ORIGIN.md and the output's sha256 there).

Writes, for each file given, its kind's schema (`<kind>-<group's first label>-<version>.json`,
the name compiler/kube_schema.py looks for): the CRD's `openAPIV3Schema` of the version named
below, made strict the way kubernetes-validate's schemas are strict, with its CEL rules
(`x-kubernetes-validations`) kept as annotations, as the ORIGIN.md files describe. With --check
nothing is written: it says whether each file is what it would write, and exits 1 if not. Needs
ruamel.yaml, and jsonschema to check what it writes.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

from vendoring import (
    SCHEMA,
    CrdKind,
    Pin,
    VendorError,
    check_pin,
    checked,
    compact,
    crd_kind_schema,
    load_crd,
    out_of_date,
    report,
)

SCRIPT = "scripts/vendor_crds.py"

JOBSET_RELEASE = "kubernetes-sigs/jobset v0.12.0, config/components/crd/bases/"
TRAINER_RELEASE = "kubeflow/trainer v2.3.0, manifests/base/crds/"
KUEUE_RELEASE = "kubernetes-sigs/kueue v0.19.2, config/components/crd/bases/"


def _kind(release: str, file_name: str, sha256: str, version: str, kind: str,
          directory: str) -> CrdKind:
    group, _, plural = file_name.removesuffix(".yaml").partition("_")
    return CrdKind(Pin(release + file_name, sha256), file_name, f"{plural}.{group}", group,
                   version, kind, directory, SCRIPT)


# Each kind's CRD file, pinned, and the version vendored: the only one for JobSet (v1alpha2)
# and Trainer (v1alpha1); for Kueue v1beta2, the storage version, the one its documentation's
# examples use (v1beta1 is still served, deprecated). See each ORIGIN.md.
KINDS = (
    _kind(JOBSET_RELEASE, "jobset.x-k8s.io_jobsets.yaml",
          "d022b87624512cf0b6741b31b24a2bea9945b5a838b50713af29332c878bb6fe",
          "v1alpha2", "JobSet", "jobset"),
    _kind(TRAINER_RELEASE, "trainer.kubeflow.org_trainjobs.yaml",
          "a742cafc5b5582640c7e0b7467c024fc237256fbca5ba0a9f0531dfb66d64416",
          "v1alpha1", "TrainJob", "trainer"),
    _kind(TRAINER_RELEASE, "trainer.kubeflow.org_trainingruntimes.yaml",
          "69b8dbdf60a18e28cddcc2b8dfc4ce72a943e14b531b9389d593118faee4919f",
          "v1alpha1", "TrainingRuntime", "trainer"),
    _kind(TRAINER_RELEASE, "trainer.kubeflow.org_clustertrainingruntimes.yaml",
          "ec84dc3388fcdbe8c61d3c247a773d14458dd9438e995bea8e50d2a18080eef9",
          "v1alpha1", "ClusterTrainingRuntime", "trainer"),
    _kind(KUEUE_RELEASE, "kueue.x-k8s.io_resourceflavors.yaml",
          "19e339c47e9ca3fa2c9eeddd27715a512f765c4794ed859733408a9715720173",
          "v1beta2", "ResourceFlavor", "kueue"),
    _kind(KUEUE_RELEASE, "kueue.x-k8s.io_clusterqueues.yaml",
          "e0a5fc9b370c70f3d993d4f599865817338ecf94187b30b15b12ff33c579bd55",
          "v1beta2", "ClusterQueue", "kueue"),
    _kind(KUEUE_RELEASE, "kueue.x-k8s.io_localqueues.yaml",
          "dd10ef8d3578e7212fa52763549e7b6be0949793a5b924495fcd293330109fed",
          "v1beta2", "LocalQueue", "kueue"),
)
BY_FILE_NAME = {kind.file_name: kind for kind in KINDS}


def kind_of(path: Path) -> CrdKind:
    """The kind whose CRD file this is, by its name in the release."""
    try:
        return BY_FILE_NAME[path.name]
    except KeyError:
        raise VendorError(f"{path.name}: not one of the CRD files this script vendors: "
                          f"{', '.join(sorted(BY_FILE_NAME))}") from None


def rendered(path: Path, kind: CrdKind, crd_sha256: str) -> str:
    """The text of the kind's schema, made from its CRD file (whose sha256 is given)."""
    return compact(checked(crd_kind_schema(load_crd(path), kind, crd_sha256)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("crds", type=Path, nargs="+", metavar="crd",
                        help="a CRD file, named as in its release (one of: "
                             f"{', '.join(BY_FILE_NAME)})")
    parser.add_argument("--into", type=Path, default=SCHEMA,
                        help="the directory that holds jobset/, trainer/ and kueue/ (default: "
                             "schema/)")
    parser.add_argument("--new-source", action="store_true",
                        help="accept a CRD whose sha256 is not the pinned one (a refresh)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a file is not what would be written")
    args = parser.parse_args(argv)

    # Every file is made before any is written: a refused one leaves all as they were.
    texts: dict[Path, str] = {}
    for path in args.crds:
        try:
            kind = kind_of(path)
        except VendorError as error:
            print(error, file=sys.stderr)
            return 1
        try:
            digest = check_pin(path, kind.pin, accept_other=args.new_source)
        except VendorError as error:
            print(f"{error}; pass --new-source to use it", file=sys.stderr)
            return 1
        try:
            texts[args.into / kind.output.relative_to(SCHEMA)] = rendered(path, kind, digest)
        except VendorError as error:
            print(f"{path.name}: {error}", file=sys.stderr)
            return 1
    if args.check:
        return report(out_of_date(texts, ()), len(texts))
    for output, text in texts.items():
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8", newline="\n")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        print(f"wrote {output.parent.name}/{output.name}: {len(text.encode())} bytes, "
              f"sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
