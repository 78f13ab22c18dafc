"""aws/efs.cfn.yaml: the shared volume as a CloudFormation stack, for the profiles that run on AWS.

kube-aws and kube-up (`template`): one template, deployed twice: first alone, for an encrypted
file system whose id (and so DNS name) the spec can take before the cluster exists; then, once
the cluster does, with its VPC, worker subnets and worker security group, which adds a security
group admitting NFS from the workers only and a mount target in each worker subnet.

eks (`eks_template`): deployed once, after eksctl, whose stack's exports give it the network.
"""

from __future__ import annotations

from typing import Any

NFS_PORT = 2049
# The tag by which the eks runbook knows a file system is its stack's to delete.
OWNER_TAG = "paddlegen.io/stack"


# kube-aws and kube-up make one worker subnet (in the cluster's one zone): one mount target.
WORKER_SUBNET = "WorkerSubnet1"
# The parameters that name the cluster's network: all empty on the first deploy.
NETWORK_PARAMETERS = ("VpcId", "WorkerSecurityGroupId", WORKER_SUBNET)


def template(cluster: str, stack: str) -> dict[str, Any]:
    """aws/efs.cfn.yaml of kube-aws and kube-up; `stack` also names the file system and its
    security group."""
    in_cluster = {"Condition": "InCluster"}
    parameters: dict[str, Any] = {
        "VpcId": {"Type": "String", "AllowedPattern": "^(vpc-[0-9a-f]+)?$",
                  "Description": "The cluster's VPC; empty on the first deploy, which makes "
                                 "the file system alone."},
        "WorkerSecurityGroupId": {"Type": "String",
                                  "AllowedPattern": "^(sg-[0-9a-f]+)?$",
                                  "Description": "The security group of the cluster's workers: "
                                                 "the only one NFS is open to."},
        WORKER_SUBNET: {"Type": "String", "AllowedPattern": "^(subnet-[0-9a-f]+)?$",
                        "Description": "A subnet of the workers, for a mount target."},
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
                "FileSystemTags": [{"Key": "Name", "Value": stack}],
            },
        },
        "SecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            **in_cluster,
            "Properties": {
                "GroupDescription": f"NFS to {stack} from the workers of {cluster}",
                "VpcId": {"Ref": "VpcId"},
                "SecurityGroupIngress": [{
                    "Description": "NFS from the workers", "IpProtocol": "tcp",
                    "FromPort": NFS_PORT, "ToPort": NFS_PORT,
                    "SourceSecurityGroupId": {"Ref": "WorkerSecurityGroupId"}}],
                # A mount target opens no connections; NFS answers belong to the workers' ones.
                "SecurityGroupEgress": [{
                    "Description": "none", "IpProtocol": "-1", "CidrIp": "127.0.0.1/32"}],
                "Tags": [{"Key": "Name", "Value": stack}],
            },
        },
        "MountTarget1": {
            "Type": "AWS::EFS::MountTarget",
            **in_cluster,
            "Properties": {"FileSystemId": {"Ref": "FileSystem"},
                           "SubnetId": {"Ref": WORKER_SUBNET},
                           "SecurityGroups": [{"Ref": "SecurityGroup"}]},
        },
    }
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Shared volume of {cluster}: encrypted EFS, NFS from the workers "
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


def eks_template(cluster: str, stack: str, zones: int) -> dict[str, Any]:
    """aws/efs.cfn.yaml of the eks profile, deployed once the cluster exists: its network comes
    from the stack eksctl made (its exports, which also keep that stack from being deleted
    first). NFS is admitted from the cluster security group, the one EKS gives the managed
    nodes, and a mount target goes into each private subnet (one per zone: EFS takes one per
    zone). The file system is made here unless the FileSystemId parameter names one; it is
    kept when the stack goes (the runbook deletes it, after the models are copied off, if its
    tag says this stack made it)."""
    exports = f"eksctl-{cluster}-cluster::"
    create = {"Condition": "CreateFileSystem"}
    file_system = {"Fn::If": ["CreateFileSystem", {"Ref": "FileSystem"}, {"Ref": "FileSystemId"}]}
    private_subnets = {"Fn::Split": [",", {"Fn::ImportValue": f"{exports}SubnetsPrivate"}]}
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"Shared volume of {cluster}: encrypted EFS, NFS from its nodes only "
                       "(paddlegen)",
        "Parameters": {"FileSystemId": {
            "Type": "String", "AllowedPattern": "^(fs-[0-9a-f]{8,40})?$",
            "Description": "An existing file system to give the cluster's nodes; empty to make "
                           "one."}},
        "Conditions": {"CreateFileSystem": {"Fn::Equals": [{"Ref": "FileSystemId"}, ""]}},
        "Resources": {
            "FileSystem": {
                "Type": "AWS::EFS::FileSystem",
                **create,
                # kept when the stack is updated or deleted: the runbook deletes it explicitly
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
                "Properties": {
                    "Encrypted": True,
                    "PerformanceMode": "generalPurpose",
                    "ThroughputMode": "bursting",
                    "FileSystemTags": [{"Key": "Name", "Value": stack},
                                       {"Key": OWNER_TAG, "Value": {"Ref": "AWS::StackName"}}],
                },
            },
            "SecurityGroup": {
                "Type": "AWS::EC2::SecurityGroup",
                "Properties": {
                    "GroupDescription": f"NFS to {stack} from the nodes of {cluster}",
                    "VpcId": {"Fn::ImportValue": f"{exports}VPC"},
                    "SecurityGroupIngress": [{
                        "Description": "NFS from the cluster's nodes", "IpProtocol": "tcp",
                        "FromPort": NFS_PORT, "ToPort": NFS_PORT,
                        "SourceSecurityGroupId": {
                            "Fn::ImportValue": f"{exports}ClusterSecurityGroupId"}}],
                    # A mount target opens no connections; NFS answers belong to the nodes' ones.
                    "SecurityGroupEgress": [{
                        "Description": "none", "IpProtocol": "-1", "CidrIp": "127.0.0.1/32"}],
                    "Tags": [{"Key": "Name", "Value": stack}],
                },
            },
            **{f"MountTarget{i}": {
                "Type": "AWS::EFS::MountTarget",
                "Properties": {"FileSystemId": file_system,
                               "SubnetId": {"Fn::Select": [i - 1, private_subnets]},
                               "SecurityGroups": [{"Ref": "SecurityGroup"}]},
            } for i in range(1, zones + 1)},
        },
        "Outputs": {"FileSystemId": {"Description": "The file system's id.",
                                     "Value": file_system}},
    }
