"""aws/efs.cfn.yaml: linted by cfn-lint and checkov, and deployed into moto's CloudFormation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from conftest import GOLDEN, GOLDEN_SPECS
from profile_harness import golden_names, profile_of, uses_aws

TEMPLATES = [spec.parent / "out" / "aws" / "efs.cfn.yaml" for spec in GOLDEN_SPECS
             if (spec.parent / "out" / "aws" / "efs.cfn.yaml").exists()]
# The eks template takes its network from eksctl's stack; the others from parameters.
EKS_TEMPLATES = [t for t in TEMPLATES if profile_of(t.parent.parent.parent.name) == "eks"]
KUBE_TEMPLATES = [t for t in TEMPLATES if t not in EKS_TEMPLATES]
BIN = Path(sys.executable).parent


def test_every_aws_golden_has_the_template() -> None:
    """Each golden of a profile of the AWS package (profiles/aws), and only those."""
    aws = [golden for golden in golden_names() if uses_aws(profile_of(golden))]
    assert aws and sorted(t.parent.parent.parent.name for t in TEMPLATES) == aws
    assert sorted(p.parent.parent.name for p in GOLDEN.glob("*/out/aws")) == aws


@pytest.mark.conformance
def test_cfn_lint_is_clean() -> None:
    result = subprocess.run([BIN / "cfn-lint", *TEMPLATES], capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.conformance
@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.parent.parent.parent.name)
def test_checkov_is_clean(template: Path) -> None:
    result = subprocess.run(
        [BIN / "checkov", "--framework", "cloudformation", "--skip-download", "--quiet",
         "--compact", "--output", "json", "-f", template],
        capture_output=True, text=True, check=False)
    report = json.loads(result.stdout)
    failed = [check["check_id"] for check in report["results"]["failed_checks"]]
    assert failed == [], result.stdout
    assert report["summary"]["passed"] >= 5


def load(template: Path) -> Any:
    return YAML(typ="safe", pure=True).load(template)


def deploy(template: Path, parameters: dict[str, str]) -> dict[str, Any]:
    """Create the stack in moto (in-process, no network) and read back what it made."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24",
                                   AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
        workers = ec2.create_security_group(GroupName="paddle-cluster-sg-worker",
                                            Description="workers", VpcId=vpc)["GroupId"]
        given = {key: {"vpc": vpc, "subnet": subnet, "workers": workers}.get(value, value)
                 for key, value in parameters.items()}
        cloudformation = boto3.client("cloudformation", region_name="us-west-2")
        cloudformation.create_stack(
            StackName="paddle-cluster-efs", TemplateBody=json.dumps(load(template)),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in given.items()])
        [stack] = cloudformation.describe_stacks(StackName="paddle-cluster-efs")["Stacks"]
        efs = boto3.client("efs", region_name="us-west-2")
        [file_system] = efs.describe_file_systems()["FileSystems"]
        mount_targets = efs.describe_mount_targets(
            FileSystemId=file_system["FileSystemId"])["MountTargets"]
        groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])
        return {"status": stack["StackStatus"],
                "outputs": {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
                "file_system": file_system, "mount_targets": mount_targets,
                "groups": {g["GroupId"]: g for g in groups["SecurityGroups"]},
                "ids": {"vpc": vpc, "subnet": subnet, "workers": workers}}


@pytest.mark.conformance
def test_the_first_deploy_makes_an_encrypted_file_system_alone() -> None:
    [template] = [t for t in TEMPLATES if t.parent.parent.parent.name == "kube-aws"]
    made = deploy(template, {"VpcId": "", "WorkerSecurityGroupId": "", "WorkerSubnet1": ""})
    assert made["status"] == "CREATE_COMPLETE"
    assert made["file_system"]["Encrypted"] is True
    assert made["mount_targets"] == []
    file_system = made["file_system"]["FileSystemId"]
    assert made["outputs"] == {"FileSystemId": file_system,
                               "DnsName": f"{file_system}.efs.us-west-2.amazonaws.com"}
    assert sorted(g["GroupName"] for g in made["groups"].values()) == [
        "default", "paddle-cluster-sg-worker"]


@pytest.mark.conformance
@pytest.mark.parametrize("template", KUBE_TEMPLATES, ids=lambda t: t.parent.parent.parent.name)
def test_in_the_cluster_nfs_is_open_to_the_workers_and_nothing_else(template: Path) -> None:
    made = deploy(template, {"VpcId": "vpc", "WorkerSecurityGroupId": "workers",
                             "WorkerSubnet1": "subnet"})
    assert made["status"] == "CREATE_COMPLETE"
    assert made["file_system"]["Encrypted"] is True
    [target] = made["mount_targets"]
    assert target["SubnetId"] == made["ids"]["subnet"]
    [efs_group] = [g for g in made["groups"].values()
                   if g["GroupName"] not in ("default", "paddle-cluster-sg-worker")]
    [rule] = efs_group["IpPermissions"]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 2049, 2049)
    assert [pair["GroupId"] for pair in rule["UserIdGroupPairs"]] == [made["ids"]["workers"]]
    assert rule["IpRanges"] == [] and rule.get("Ipv6Ranges", []) == []
    # moto keeps a new group's default egress; the template asks for none (AWS honours that)
    [egress] = load(template)["Resources"]["SecurityGroup"]["Properties"]["SecurityGroupEgress"]
    assert egress["CidrIp"] == "127.0.0.1/32"


def deploy_on_eksctl(template: Path, file_system_id: str | None) -> dict[str, Any]:
    """The stack in moto next to what eksctl's cluster stack exports (the VPC, two private
    subnets, the cluster security group), with FileSystemId empty, or an existing file system's
    id (None: one made first, outside the stack)."""
    import boto3
    from moto import mock_aws

    cluster = cluster_name(template)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-west-2")
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24",
                                     AvailabilityZone=zone)["Subnet"]["SubnetId"]
                   for i, zone in enumerate(["us-west-2a", "us-west-2b"])]
        cluster_group = ec2.create_security_group(GroupName="eks-cluster-sg",
                                                  Description="EKS", VpcId=vpc)["GroupId"]
        exports = {"VPC": vpc, "SubnetsPrivate": ",".join(subnets),
                   "ClusterSecurityGroupId": cluster_group}
        cloudformation = boto3.client("cloudformation", region_name="us-west-2")
        cloudformation.create_stack(StackName=f"eksctl-{cluster}-cluster", TemplateBody=json.dumps({
            "Resources": {"Nothing": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {name: {"Value": value,
                               "Export": {"Name": f"eksctl-{cluster}-cluster::{name}"}}
                        for name, value in exports.items()}}))
        efs = boto3.client("efs", region_name="us-west-2")
        brought = "" if file_system_id == "" else efs.create_file_system(
            CreationToken="brought", Encrypted=True)["FileSystemId"]
        cloudformation.create_stack(
            StackName=f"{cluster}-efs", TemplateBody=json.dumps(load(template)),
            Parameters=[{"ParameterKey": "FileSystemId", "ParameterValue": brought}])
        [stack] = cloudformation.describe_stacks(StackName=f"{cluster}-efs")["Stacks"]
        file_systems = efs.describe_file_systems()["FileSystems"]
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        mount_targets = efs.describe_mount_targets(
            FileSystemId=outputs["FileSystemId"])["MountTargets"]
        tags = efs.list_tags_for_resource(ResourceId=outputs["FileSystemId"])["Tags"]
        groups = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]}])
        return {"status": stack["StackStatus"], "outputs": outputs, "brought": brought,
                "file_systems": file_systems, "mount_targets": mount_targets, "tags": tags,
                "groups": groups["SecurityGroups"], "subnets": subnets,
                "cluster_group": cluster_group}


def cluster_name(template: Path) -> str:
    """The cluster of the golden whose template this is."""
    spec = YAML(typ="safe", pure=True).load(template.parent.parent.parent / "spec.yaml")
    name: str = spec["cluster"]["name"]
    return name


@pytest.mark.conformance
@pytest.mark.parametrize("template", EKS_TEMPLATES, ids=lambda t: t.parent.parent.parent.name)
def test_on_eks_the_stack_makes_a_file_system_open_to_the_cluster_only(template: Path) -> None:
    made = deploy_on_eksctl(template, "")
    assert made["status"] == "CREATE_COMPLETE"
    [file_system] = made["file_systems"]
    assert file_system["Encrypted"] is True
    assert made["outputs"] == {"FileSystemId": file_system["FileSystemId"]}
    # the runbook deletes the file system only if this tag names its stack
    assert {"Key": "paddlegen.io/stack", "Value": f"{cluster_name(template)}-efs"} in made["tags"]
    assert sorted(t["SubnetId"] for t in made["mount_targets"]) == sorted(made["subnets"])
    [efs_group] = [g for g in made["groups"] if g["GroupName"] not in ("default",
                                                                       "eks-cluster-sg")]
    [rule] = efs_group["IpPermissions"]
    assert (rule["IpProtocol"], rule["FromPort"], rule["ToPort"]) == ("tcp", 2049, 2049)
    assert [pair["GroupId"] for pair in rule["UserIdGroupPairs"]] == [made["cluster_group"]]
    assert rule["IpRanges"] == []
    assert load(template)["Resources"]["FileSystem"]["DeletionPolicy"] == "Retain"


@pytest.mark.conformance
def test_on_eks_a_file_system_brought_gets_mount_targets_and_no_twin() -> None:
    made = deploy_on_eksctl(EKS_TEMPLATES[0], None)
    assert made["status"] == "CREATE_COMPLETE"
    assert [fs["FileSystemId"] for fs in made["file_systems"]] == [made["brought"]]
    assert made["outputs"] == {"FileSystemId": made["brought"]}
    assert len(made["mount_targets"]) == 2
    assert not [tag for tag in made["tags"] if tag["Key"] == "paddlegen.io/stack"]
