"""aws/efs.cfn.yaml: the shared volume as a CloudFormation stack, for the profiles that run on AWS.

One template, deployed twice: first alone, for an encrypted file system whose id (and so DNS
name) the spec can take before the cluster exists; then, once the cluster does, with its VPC,
worker subnets and worker security group, which adds a security group admitting NFS from the
workers only and a mount target in each worker subnet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NFS_PORT = 2049


@dataclass(frozen=True)
class EfsStack:
    """What the template needs to know: its names and how many worker subnets there are."""

    stack_name: str
    name: str  # the file system's and the security group's Name tag
    cluster: str
    worker_subnets: int


def subnet_parameter(index: int) -> str:
    return f"WorkerSubnet{index}"


def network_parameters(stack: EfsStack) -> list[str]:
    """The parameters that name the cluster's network: all empty on the first deploy."""
    return ["VpcId", "WorkerSecurityGroupId",
            *(subnet_parameter(i) for i in range(1, stack.worker_subnets + 1))]


def template(stack: EfsStack) -> dict[str, Any]:
    in_cluster = {"Condition": "InCluster"}
    subnets = [subnet_parameter(i) for i in range(1, stack.worker_subnets + 1)]
    parameters: dict[str, Any] = {
        "VpcId": {"Type": "String", "AllowedPattern": "^(vpc-[0-9a-f]+)?$",
                  "Description": "The cluster's VPC; empty on the first deploy, which makes "
                                 "the file system alone."},
        "WorkerSecurityGroupId": {"Type": "String",
                                  "AllowedPattern": "^(sg-[0-9a-f]+)?$",
                                  "Description": "The security group of the cluster's workers: "
                                                 "the only one NFS is open to."},
        **{name: {"Type": "String", "AllowedPattern": "^(subnet-[0-9a-f]+)?$",
                  "Description": "A subnet of the workers, for a mount target."}
           for name in subnets},
    }
    resources: dict[str, Any] = {
        "FileSystem": {
            "Type": "AWS::EFS::FileSystem",
            "DeletionPolicy": "Delete",  # the runbook copies the models off before teardown
            "UpdateReplacePolicy": "Retain",
            "Properties": {
                "Encrypted": True,
                "PerformanceMode": "generalPurpose",
                "ThroughputMode": "bursting",
                "FileSystemTags": [{"Key": "Name", "Value": stack.name}],
            },
        },
        "SecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            **in_cluster,
            "Properties": {
                "GroupDescription": f"NFS to {stack.name} from the workers of {stack.cluster}",
                "VpcId": {"Ref": "VpcId"},
                "SecurityGroupIngress": [{
                    "Description": "NFS from the workers", "IpProtocol": "tcp",
                    "FromPort": NFS_PORT, "ToPort": NFS_PORT,
                    "SourceSecurityGroupId": {"Ref": "WorkerSecurityGroupId"}}],
                # A mount target opens no connections; NFS answers belong to the workers' ones.
                "SecurityGroupEgress": [{
                    "Description": "none", "IpProtocol": "-1", "CidrIp": "127.0.0.1/32"}],
                "Tags": [{"Key": "Name", "Value": stack.name}],
            },
        },
        **{f"MountTarget{i}": {
            "Type": "AWS::EFS::MountTarget",
            **in_cluster,
            "Properties": {"FileSystemId": {"Ref": "FileSystem"}, "SubnetId": {"Ref": subnet},
                           "SecurityGroups": [{"Ref": "SecurityGroup"}]},
        } for i, subnet in enumerate(subnets, start=1)},
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Shared volume of {stack.cluster}: encrypted EFS, NFS from the workers "
                       "only (paddlegen)",
        "Parameters": parameters,
        "Conditions": {"InCluster": {"Fn::Not": [{"Fn::Equals": [{"Ref": "VpcId"}, ""]}]}},
        "Resources": resources,
        "Outputs": {
            "FileSystemId": {"Description": "The file system's id.",
                             "Value": {"Ref": "FileSystem"}},
            "DnsName": {"Description": "The file system's DNS name, for NFS mounts.",
                        "Value": {"Fn::Sub": "${FileSystem}.efs.${AWS::Region}.amazonaws.com"}},
        },
    }
