"""AWS artifacts: kube-aws's cluster.yaml and the IAM policies the seeds attach by hand."""

from __future__ import annotations

from typing import Any

from paddlegen.compiler.plan import Plan

MANAGED_POLICY_PREFIX = "arn:aws:iam::aws:policy/"
# Seed 001/003: the AWS managed policies the IAM user needs (ARNs relative to the prefix).
KUBE_AWS_MANAGED_POLICIES = (
    "AmazonEC2FullAccess",
    "AmazonS3FullAccess",
    "AmazonRoute53FullAccess",
    "AmazonRoute53DomainsFullAccess",
    "AmazonElasticFileSystemFullAccess",
    "AmazonVPCFullAccess",
    "IAMUserSSHKeys",
    "IAMFullAccess",
    "job-function/NetworkAdministrator",
    "AWSKeyManagementServicePowerUser",
)
# What kube-aws does to its CloudFormation stack (seed 001/003's inline policy).
CLOUDFORMATION_ACTIONS = (
    "cloudformation:CreateStack",
    "cloudformation:UpdateStack",
    "cloudformation:DeleteStack",
    "cloudformation:DescribeStacks",
    "cloudformation:DescribeStackResource",
    "cloudformation:GetTemplate",
    "cloudformation:DescribeStackEvents",
)


def managed_policy_arns(names: tuple[str, ...]) -> list[str]:
    return [MANAGED_POLICY_PREFIX + name for name in names]


class Quoted(str):
    """A string the YAML renderer writes double-quoted (kube-aws's own template quotes the ARN)."""


def cluster_yaml(plan: Plan) -> dict[str, Any]:
    """kube-aws v0.9.x cluster.yaml: its own keys; the optional ones when the spec sets them."""
    c = plan.cluster
    config: dict[str, Any] = {
        "clusterName": c.name,
        "externalDNSName": c.external_dns_name,
        "keyName": c.key_name,
        "region": c.region,
        "availabilityZone": c.availability_zone,
        "kmsKeyArn": Quoted(c.kms_key_arn),
        "workerCount": plan.worker_count,
    }
    optional = {
        "controllerInstanceType": c.controller_instance_type,
        "controllerRootVolumeSize": c.controller_root_volume_size,
        "workerInstanceType": c.worker_instance_type,
        "workerRootVolumeSize": c.worker_root_volume_size,
    }
    return config | {key: value for key, value in optional.items() if value is not None}


def iam_policy(plan: Plan) -> dict[str, Any]:
    """The inline policy for `aws iam put-user-policy`: KMS for TLS assets, the cluster's stack."""
    c = plan.cluster
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "KubeAwsKmsAssets",
                "Effect": "Allow",
                "Action": ["kms:Decrypt", "kms:Encrypt"],
                "Resource": [f"arn:aws:kms:*:{c.account_id}:key/*"],
            },
            {
                "Sid": "KubeAwsClusterStack",
                "Effect": "Allow",
                "Action": list(CLOUDFORMATION_ACTIONS),
                "Resource": [
                    f"arn:aws:cloudformation:{c.region}:{c.account_id}:stack/{c.name}/*"
                ],
            },
        ],
    }
