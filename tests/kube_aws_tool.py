"""Run the real kube-aws releases, offline, to prove that a generated `cluster.yaml` is accepted.

The binaries live beside the project at `../shared/tools/kube-aws/` (see its README.md). Tests
call `binary(version)` first and skip, saying why, when it is None.

What counts as acceptance (from that README, checked against the kube-aws sources):

* v0.9.1: `kube-aws render stack` exits 0 (it parses the whole file, so a wrong type is refused)
  AND every key is a key of v0.9.1's `Cluster` struct: v0.9.1 silently ignores unknown keys, so
  the keys are compared with `V091_CLUSTER_SCHEMA` below.
* v0.9.9: `kube-aws validate --s3-uri=s3://b/p` loads the whole config (it refuses unknown keys,
  checks node pools and API endpoints) and renders every stack before its first AWS call, an S3
  PutObject. Accepted = the output reaches "Validating UserData and stack template" and the
  command then fails only on the network. (`render stack` is not run per check: it loads only the
  control-plane part, which `validate` loads too.) Also refused: keys in the sub-trees where
  v0.9.9 does not look for unknown keys (`V099_UNCHECKED_SUBTREES`), and top-level keys it
  parses but never applies (`V099_IGNORED_WORKER_KEYS`; `hostedZoneId`/`recordSetTTL` beside
  `apiEndpoints`).

Nothing reaches AWS: fake credentials, HTTP(S)_PROXY pointing at a closed local port, and no
AWS_CA_BUNDLE (aws-sdk-go builds a proxy-less transport when that is set). KMS is never called:
every credential gets a placeholder `<name>.enc` plus its `.fingerprint`, which kube-aws takes as
an up-to-date encrypted copy.

`init` + `render credentials --generate-ca` (+ `render stack` for v0.9.9's templates) run once per
version per process; each check copies that cached assets directory into its own workdir.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeAlias

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

KUBE_AWS_DIR: Path = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "kube-aws"

VERSIONS = ("v0.9.1", "v0.9.9")

# Without amiId, kube-aws looks the CoreOS AMI up in the release feed over HTTPS, which fails
# offline; any well-formed id will do because nothing is launched.
PLACEHOLDER_AMI = "ami-12345678"
S3_URI = "s3://b/p"
TIMEOUT_SECONDS = 120

_INIT_ARGS = (
    "--cluster-name=conformance",
    "--external-dns-name=conformance.example.com",
    "--region=us-west-2",
    "--availability-zone=us-west-2a",
    "--key-name=conformance",
    "--kms-key-arn=arn:aws:kms:us-west-2:123456789012:key/00000000-0000-0000-0000-000000000000",
)

# A schema is a Go type name (a leaf; "map[string]string" keys are free), a mapping of YAML key to
# schema (a struct), or a one-element list holding the schema of each item (a slice of structs).
Schema: TypeAlias = "str | Mapping[str, Schema] | list[Schema]"

# kube-aws v0.9.1 (tag v0.9.1, commit 7a298959ce239cdcdc224cececac9f069cb861d3), config/config.go:
# the yaml tags of `type Cluster struct` (lines 140-193), `Subnet` (195-199), `Experimental`
# (201-205), `NodeDrainer` (207-209), `AwsEnvironment` (211-214), `WaitSignal` (216-219).
# Left out on purpose: `IsChinaRegion` (line 192) has no yaml tag, so yaml.v2 would read a key
# "ischinaregion", but Config() overwrites it from the region (line 351): it is ignored like an
# unknown key. Note the upstream typo: the ephemeral etcd key really is `etcdDataVolumEphemeral`.
V091_CLUSTER_SCHEMA: Mapping[str, Schema] = {
    "clusterName": "string",
    "externalDNSName": "string",
    "keyName": "string",
    "region": "string",
    "availabilityZone": "string",
    "releaseChannel": "string",
    "amiId": "string",
    "controllerCount": "int",
    "controllerCreateTimeout": "string",
    "controllerInstanceType": "string",
    "controllerRootVolumeType": "string",
    "controllerRootVolumeIOPS": "int",
    "controllerRootVolumeSize": "int",
    "workerCount": "int",
    "workerCreateTimeout": "string",
    "workerInstanceType": "string",
    "workerRootVolumeType": "string",
    "workerRootVolumeIOPS": "int",
    "workerRootVolumeSize": "int",
    "workerSpotPrice": "string",
    "etcdCount": "int",
    "etcdInstanceType": "string",
    "etcdRootVolumeSize": "int",
    "etcdDataVolumeSize": "int",
    "etcdDataVolumEphemeral": "bool",
    "vpcId": "string",
    "routeTableId": "string",
    "vpcCIDR": "string",
    "instanceCIDR": "string",
    "podCIDR": "string",
    "serviceCIDR": "string",
    "dnsServiceIP": "string",
    "kubernetesVersion": "string",
    "hyperkubeImageRepo": "string",
    "awsCliImageRepo": "string",
    "awsCliTag": "string",
    "containerRuntime": "string",
    "kmsKeyArn": "string",
    "createRecordSet": "bool",
    "recordSetTTL": "int",
    "tlsCADurationDays": "int",
    "tlsCertDurationDays": "int",
    "hostedZone": "string",
    "hostedZoneId": "string",
    "stackTags": "map[string]string",
    "useCalico": "bool",
    "subnets": [{"availabilityZone": "string", "instanceCIDR": "string"}],
    "mapPublicIPs": "bool",
    "elasticFileSystemId": "string",
    "experimental": {
        "nodeDrainer": {"enabled": "bool"},
        "awsEnvironment": {"enabled": "bool", "environment": "map[string]string"},
        "waitSignal": {"enabled": "bool", "maxBatchSize": "int"},
    },
}

# kube-aws v0.9.9 (tag v0.9.9, commit 22673054e2e2de1f096980050a5f52060974929a) refuses unknown
# keys only where a struct embeds model.UnknownKeys and core/root/config/config.go:121-162 checks
# it: the top level, worker, worker.nodePools[] (+ .rootVolume, .autoScalingGroup, .spotFleet),
# controller (+ .rootVolume, .autoScalingGroup), etcd (+ .rootVolume, .dataVolume), experimental,
# addons, apiEndpoints[]. Elsewhere yaml.v2 drops unknown keys silently, e.g. `createRecordSet`
# under apiEndpoints[].loadBalancer. These sub-trees, which a cluster generator is likely to
# write, are checked here against their structs: model/api_endpoint_lb.go:12-36 (its Identifier
# and HostedZone are model/identifier.go:8-12, model/hosted_zone.go:6-10), model/subnet.go:8-17
# (+ model/nat_gateway.go:7-10, model/internet_gateway.go:3-5), model/subnet_reference.go:4-8.
_V099_ID: Mapping[str, Schema] = {
    "id": "string", "idFromStackOutput": "string", "idFromFn": "string",
}
_V099_SUBNET: Mapping[str, Schema] = {
    **_V099_ID,
    "availabilityZone": "string",
    "name": "string",
    "instanceCIDR": "string",
    "internetGateway": _V099_ID,
    "natGateway": {**_V099_ID, "eipAllocationId": "string"},
    "private": "bool",
    "routeTable": _V099_ID,
}
_V099_API_ENDPOINT_LB: Mapping[str, Schema] = {
    **_V099_ID,
    "apiAccessAllowedSourceCIDRs": "[]string",
    "managed": "*bool",
    "subnets": [{"name": "string"}],
    "private": "*bool",
    "recordSetManaged": "*bool",
    "recordSetTTL": "*int",
    "hostedZone": _V099_ID,
    "securityGroupIds": "[]string",
    "type": "*string",
}
V099_UNCHECKED_SUBTREES: tuple[tuple[str, Schema], ...] = (
    ("apiEndpoints[].loadBalancer", _V099_API_ENDPOINT_LB),
    ("subnets[]", _V099_SUBNET),
    ("worker.nodePools[].subnets[]", _V099_SUBNET),
    ("controller.subnets[]", _V099_SUBNET),
    ("etcd.subnets[]", _V099_SUBNET),
)
# Top-level keys v0.9.9 still parses but reads only to build the default API endpoint from
# `externalDNSName` (core/controlplane/config/config.go:262-281); next to `apiEndpoints` they are
# silently ignored (kube-aws refuses `externalDNSName` there itself, config.go:265-267).
V099_LEGACY_DNS_KEYS = ("hostedZoneId", "recordSetTTL")
# Top-level worker defaults v0.9.9 parses and validates but never applies: a node pool starts from
# model/node_pool_config.go:34-52 (t2.medium, 30 GiB gp2, ...) before its keys are read
# (core/nodepool/config/config.go:143-152), so core/nodepool/config/worker.go:30-60 finds nothing
# empty to fill; the others are used by no template. (`workerRootVolumeIOPS` is left out: it does
# fill an io1 pool's zero iops.) Seen on the real binary: a pool without instanceType got
# t2.medium beside `workerInstanceType: m4.large`.
V099_IGNORED_WORKER_KEYS = (
    "workerCreateTimeout", "workerInstanceType", "workerRootVolumeType", "workerRootVolumeSize",
    "workerSpotPrice", "workerSecurityGroupIds", "workerTenancy", "workerTopologyPrivate",
)

_REACHED_V099 = "Validating UserData and stack template"
# How the first AWS call dies offline: the proxy refuses, or (with another network setup) DNS or
# TLS fails. Anything else after _REACHED_V099 is a real error and means "not accepted".
_NETWORK_FAILURE = re.compile(
    r"RequestError: send request failed\s*\ncaused by: .*("
    r"proxyconnect|connection refused|no such host|dial tcp|i/o timeout|x509|certificate"
    r"|network is unreachable|connection reset)"
)


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    output: str


def binary(version: str) -> Path | None:
    """The kube-aws binary for `version` ("v0.9.1" or "v0.9.9"), or None when it is absent."""
    if version not in VERSIONS:
        raise ValueError(f"unsupported kube-aws version {version!r}; expected one of {VERSIONS}")
    path = KUBE_AWS_DIR / f"kube-aws-{version}"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing_reason(version: str) -> str:
    """Why `binary(version)` is None, for pytest.skip()."""
    return f"kube-aws {version} is not installed at {KUBE_AWS_DIR / f'kube-aws-{version}'}"


def check_cluster_yaml(version: str, cluster_yaml: str, workdir: Path) -> Verdict:
    """Run kube-aws `version` on `cluster_yaml` in `workdir` (created if missing) and judge it."""
    exe = binary(version)
    if exe is None:
        raise FileNotFoundError(missing_reason(version))
    workdir.mkdir(parents=True, exist_ok=True)
    parsed, parse_error = _load_yaml(cluster_yaml)
    text = cluster_yaml
    if not (isinstance(parsed, Mapping) and "amiId" in parsed):
        text = f"{cluster_yaml.rstrip()}\namiId: {PLACEHOLDER_AMI}\n"
    _copy_assets(version, workdir)
    (workdir / "cluster.yaml").write_text(text)
    if version == "v0.9.1":
        rc, out = _run(exe, workdir, "render", "stack")
        ok = rc == 0
        problems = unknown_keys(parsed, V091_CLUSTER_SCHEMA)
        why = "not in its Cluster struct"
    else:
        rc, out = _run(exe, workdir, "validate", f"--s3-uri={S3_URI}")
        ok = _REACHED_V099 in out and (rc == 0 or _NETWORK_FAILURE.search(out) is not None)
        problems = [p for where, schema in V099_UNCHECKED_SUBTREES
                    for at, sub in _select(parsed, where) for p in unknown_keys(sub, schema, at)]
        if isinstance(parsed, Mapping):
            legacy = V099_LEGACY_DNS_KEYS if "apiEndpoints" in parsed else ()
            problems += [key for key in (*legacy, *V099_IGNORED_WORKER_KEYS) if key in parsed]
        why = "unknown where they are, or read but never applied"
    if parse_error is not None:
        out += f"\nnot parseable as YAML here: {parse_error}\n"
    if problems:
        out += (f"\nkube-aws {version} would silently ignore these key(s) ({why}): "
                f"{', '.join(problems)}\n")
    return Verdict(ok and not problems and parse_error is None, out)


def check_cluster_yamls(version: str, cluster_yamls: Sequence[str], workdir: Path,
                        jobs: int | None = None) -> list[Verdict]:
    """`check_cluster_yaml` for many files at once, in workdir/0, workdir/1, ...

    Worth it for v0.9.9: an accepted file costs ~0.25 s of CPU plus ~0.35 s asleep in
    aws-sdk-go's retry back-off (3 retries of the refused S3 PutObject).
    """
    jobs = jobs or min(32, 3 * (os.cpu_count() or 1))
    if binary(version) is None:
        raise FileNotFoundError(missing_reason(version))
    _assets(version)  # build the cache once, before the threads want it
    dirs = [workdir / str(i) for i in range(len(cluster_yamls))]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(partial(check_cluster_yaml, version), cluster_yamls, dirs))


def unknown_keys(value: object, schema: Schema, path: str = "") -> list[str]:
    """Dotted paths of the keys in `value` that `schema` does not define."""
    if isinstance(schema, list):
        if not isinstance(value, list):
            return []  # a wrong type is for kube-aws itself to refuse
        return [p for i, item in enumerate(value)
                for p in unknown_keys(item, schema[0], f"{path}[{i}]")]
    if isinstance(schema, str) or not isinstance(value, Mapping):
        return []
    found: list[str] = []
    for key, sub in value.items():
        where = f"{path}.{key}" if path else str(key)
        if not isinstance(key, str) or key not in schema:
            found.append(where)
        else:
            found.extend(unknown_keys(sub, schema[key], where))
    return found


def _select(value: object, where: str) -> list[tuple[str, object]]:
    """The (path, value) pairs at `where`, a dotted path in which `name[]` means every item."""
    found: list[tuple[str, object]] = [("", value)]
    for step in where.split("."):
        name, every = step.removesuffix("[]"), step.endswith("[]")
        deeper: list[tuple[str, object]] = []
        for at, node in found:
            if not isinstance(node, Mapping) or name not in node:
                continue
            child, at = node[name], f"{at}.{name}" if at else name
            if not every:
                deeper.append((at, child))
            elif isinstance(child, list):
                deeper.extend((f"{at}[{i}]", item) for i, item in enumerate(child))
        found = deeper
    return found


def _load_yaml(text: str) -> tuple[object, str | None]:
    try:
        return YAML(typ="safe", pure=True).load(io.StringIO(text)), None
    except YAMLError as error:
        return None, str(error)


def _env(workdir: Path) -> dict[str, str]:
    dropped = ("AWS_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(dropped)}
    proxy = "http://127.0.0.1:9"  # discard port, nothing listens: every AWS call fails at once
    return {
        **env,
        "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SHARED_CREDENTIALS_FILE": str(workdir / "no-aws-credentials"),
        "AWS_CONFIG_FILE": str(workdir / "no-aws-config"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "https_proxy": proxy, "http_proxy": proxy,
    }


def _run(exe: Path, cwd: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [str(exe), *args], cwd=cwd, env=_env(cwd), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=TIMEOUT_SECONDS, check=False,
    )
    return done.returncode, f"$ kube-aws {' '.join(args)}  (rc={done.returncode})\n{done.stdout}"


_cache: dict[str, Path] = {}
_cache_lock = threading.Lock()


def _assets(version: str) -> Path:
    """A directory holding credentials/ (and v0.9.9's userdata/ and stack-templates/)."""
    with _cache_lock:
        if version not in _cache:
            root = Path(tempfile.mkdtemp(prefix=f"kube-aws-{version}-assets-"))
            atexit.register(shutil.rmtree, root, True)
            _cache[version] = _build_assets(version, root)
        return _cache[version]


def _build_assets(version: str, root: Path) -> Path:
    exe = binary(version)
    assert exe is not None
    init = [*_INIT_ARGS, *(["--no-record-set"] if version != "v0.9.1" else [])]
    steps: list[tuple[str, ...]] = [("init", *init), ("render", "credentials", "--generate-ca")]
    for step in steps:
        rc, out = _run(exe, root, *step)
        if rc != 0:
            raise RuntimeError(f"kube-aws {version} set-up failed:\n{out}")
    if version == "v0.9.1":
        return root  # its `render stack` writes its own templates (and reads no credentials)
    with (root / "cluster.yaml").open("a") as f:
        f.write(f"\namiId: {PLACEHOLDER_AMI}\n")
    rc, out = _run(exe, root, "render", "stack")  # writes userdata/ and stack-templates/
    if rc != 0:
        raise RuntimeError(f"kube-aws {version} set-up failed:\n{out}")
    credentials = root / "credentials"
    for raw in sorted(credentials.iterdir()):
        if raw.name.startswith(".") or raw.suffix in (".enc", ".fingerprint"):
            continue
        Path(f"{raw}.enc").write_text("placeholder, never decrypted\n")
        Path(f"{raw}.fingerprint").write_text(hashlib.sha256(raw.read_bytes()).hexdigest())
    return root


def _copy_assets(version: str, workdir: Path) -> None:
    source = _assets(version)
    for name in ("credentials", "userdata", "stack-templates"):
        target = workdir / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)  # a reused workdir starts from the cached state again
        if (source / name).is_dir():
            shutil.copytree(source / name, target, symlinks=True)
