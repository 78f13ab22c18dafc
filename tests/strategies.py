"""Hypothesis strategies: valid specs of every profile, as the plain data a user would write."""

from __future__ import annotations

from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from paddlegen.compiler.render import to_yaml

REGIONS = ["us-west-2", "us-east-1", "eu-west-1", "ap-southeast-2", "sa-east-1"]
IMAGES = ["paddlepaddle/paddle-tutorial:k8s_train", "registry.example.com:5000/team/paddle:v1.2",
          "mypaddle/paddle:quickstart", "paddle@sha256:" + "a" * 64,
          "gcr.io/my-project/paddle_train-v2:1.0", "localhost:5000/a/b-c-d:1",
          "myorg/paddle-k8s-train:v1"]
KUBE_AWS_VERSIONS = ["v0.9.1", "v0.9.9"]
labels = st.from_regex(r"\A[a-z]([a-z0-9-]{0,55}[a-z0-9])?\Z")


def dump(data: dict[str, Any]) -> bytes:
    # YAML 1.1 booleans (a label "n" or "on") quoted, as the loader wants them. A plain ruamel
    # safe dumper quoted them only after render's ruamel set-up had patched its representer.
    return to_yaml(data).encode()


@st.composite
def parameter_server(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.integers(1, 40))
    dense, sparse = draw(st.integers(1, 8)), draw(st.integers(0, 8))
    return {"image": draw(st.sampled_from(IMAGES)), "nodes": nodes,
            "port": draw(st.integers(1, 65536 - dense - sparse)), "portsNum": dense,
            "portsNumForSparse": sparse,
            "gradientServers": draw(st.integers(1, nodes)),
            "trainerCount": draw(st.integers(1, 64)),
            "nic": draw(st.sampled_from(["eth0", "ens5", "bond0.12"])),
            "configDir": draw(st.from_regex(r"\A[A-Za-z0-9_]{1,20}\Z")),
            "activeDeadlineSeconds": draw(st.integers(1, 366 * 24 * 3600))}


@st.composite
def record_set(draw: st.DrawFn, version: str) -> dict[str, Any]:
    """kube-aws's DNS settings: none, or a record set in a hosted zone (by id; by name too for
    v0.9.1), with a TTL or not."""
    if not draw(st.booleans()):
        return {}
    zone = draw(st.sampled_from(
        ["id", "name"] if version == "v0.9.1" else ["id"]))
    found = ({"hostedZoneId": draw(st.from_regex(r"\AZ[A-Z0-9]{12}\Z"))} if zone == "id"
             else {"hostedZone": draw(labels) + ".example.com"})
    return {"createRecordSet": True, **found,
            **draw(st.fixed_dictionaries({}, optional={"recordSetTTL": st.integers(1, 3600)}))}


@st.composite
def kube_aws_specs(draw: st.DrawFn, version: str | None = None) -> dict[str, Any]:
    version = version or draw(st.sampled_from(KUBE_AWS_VERSIONS))
    region = draw(st.sampled_from(REGIONS))
    # v0.9.9 derives an IAM role name from both, limited to 64 characters (rule iam-role-name)
    longest_name = 31 if version == "v0.9.1" else 36 - len(region)
    account = draw(st.from_regex(r"\A[0-9]{12}\Z"))
    training = draw(parameter_server())
    capacity = draw(st.integers(1, 10_000))
    name, data_job = draw(labels), draw(labels)
    assume(name != data_job)
    efs_id = draw(st.from_regex(r"\A[0-9a-f]{8}\Z"))
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "kube-aws",
        "metadata": {"name": name, "namespace": draw(labels)},
        "cluster": {
            "kubeAwsVersion": version,
            "name": draw(st.from_regex(rf"\A[A-Za-z][A-Za-z0-9-]{{0,{longest_name - 1}}}\Z")),
            "region": region,
            "availabilityZone": region + draw(st.sampled_from("abc")), "accountId": account,
            # EC2's: no space first or last; a '-' first, as an option of the AWS CLI would be
            "keyName": draw(st.from_regex(r"\A[A-Za-z_.-]([A-Za-z_. -]{0,28}[A-Za-z_.-])?\Z")),
            "kmsKeyArn": f"arn:aws:kms:{region}:{account}:key/{draw(st.uuids())}",
            "externalDNSName": draw(labels),
            "workerCount": training["nodes"] + draw(st.integers(0, 5)),
            "s3Uri": f"s3://{draw(labels)[:40]}-bucket/{draw(labels)}",
            **draw(record_set(version)),
            **draw(st.fixed_dictionaries({}, optional={
                "workerInstanceType": st.sampled_from(["m3.large", "c5.2xlarge"]),
                "controllerInstanceType": st.sampled_from(["m3.medium", "t2.large"]),
                "controllerRootVolumeSize": st.integers(1, 500),
                "workerRootVolumeSize": st.integers(1, 500),
                "vpcCIDR": st.just("10.0.0.0/16"),
                "instanceCIDR": st.just("10.0.1.0/24"),
                "podCIDR": st.sampled_from(["10.2.0.0/16", "172.16.0.0/16"]),
                "serviceCIDR": st.just("10.3.0.0/24"),
                "dnsServiceIP": st.just("10.3.0.53")}))},
        "storage": {"efs": {"dnsName": f"fs-{efs_id}.efs.{region}.amazonaws.com"},
                    "claimName": draw(labels), "capacity": f"{capacity}Gi",
                    "request": f"{draw(st.integers(1, capacity))}Gi"},
        "dataset": {"image": draw(st.sampled_from(IMAGES)), "jobName": data_job},
        "training": training,
    }


@st.composite
def kube_up_specs(draw: st.DrawFn) -> dict[str, Any]:
    region = draw(st.sampled_from(REGIONS))
    training = draw(parameter_server())
    bucket = draw(st.one_of(st.none(), labels.map(lambda label: f"s3://{label}-artifacts")))
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "kube-up",
        "metadata": {"name": draw(labels)},
        "cluster": {"name": draw(st.from_regex(r"\A[a-z][a-z0-9-]{0,10}\Z")),
                    "availabilityZone": region + "b", "workerCount": training["nodes"],
                    **({"s3Uri": bucket} if bucket else {})},
        "storage": {"hostPath": "/" + draw(labels)},
        "training": training,
    }


@st.composite
def local_specs(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "apiVersion": "paddlegen/v1", "kind": "TrainingJob", "profile": "local",
        "metadata": {"name": draw(labels)},
        "kubeVersion": draw(st.sampled_from(["1.5", "1.8", "1.25", "1.35"])),
        "storage": {"hostPath": "/data/" + draw(labels)},
        "training": {"numPasses": draw(st.integers(1, 1000)), "useGpu": draw(st.booleans()),
                     "trainerCount": draw(st.integers(1, 64)),
                     "testAllDataInOnePeriod": draw(st.booleans())},
    }


any_valid_spec = st.one_of(kube_aws_specs(), kube_up_specs(), local_specs())
