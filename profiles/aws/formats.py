"""The grammars of AWS values in the AWS profiles' specs, each with the words a problem uses for
it (registered with paddlegen.schema.patterns as they are defined)."""

from __future__ import annotations

from paddlegen.schema.patterns import DNS_LABEL_MAX, DNS_NAME_MAX, grammar

STACK_NAME = grammar(
    r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
    "a CloudFormation stack name: a letter, then up to 127 letters, digits or '-' (no '_')",
    128,  # CloudFormation's limit of a stack name
)
# A region is one label of its endpoints' host names (ec2.us-west-2.amazonaws.com); botocore
# refuses a region name that is no host label.
REGION = grammar(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$", "an AWS region such as us-west-2",
                 DNS_LABEL_MAX)
ZONE = grammar(
    r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9][a-z]$", "an availability zone such as us-west-2a",
    DNS_LABEL_MAX + 1,  # a region and a letter
)
ACCOUNT_ID = grammar(r"^[0-9]{12}$", "an AWS account id of exactly 12 digits", 12)
# EC2's rule of a key pair name: "A key name can include up to 255 ASCII characters. It can't
# include leading or trailing spaces" (Amazon EC2 User Guide, "Create a key pair for your Amazon
# EC2 instance"; the API's CreateKeyPair KeyName: "Up to 255 ASCII characters"). Printable ASCII
# only, as before: a control character is no name to type, or to see in a listing.
# Not `file://` or `fileb://` in front, nor `[`: the AWS CLI reads the first two as a file's
# content and the last as JSON, where the runbook passes the name (EC2 would take them).
KEY_NAME = grammar(
    r"^(?!file://|fileb://|\[)[\x21-\x7e]([\x20-\x7e]{0,253}[\x21-\x7e])?$",
    "an EC2 key pair name: 1-255 printable ASCII characters, the first and the last no space, "
    "not beginning with file://, fileb:// or [ (which the AWS CLI would read as a file or JSON)",
    255,  # EC2's limit of a key pair name
)
KMS_KEY_ARN = grammar(
    r"^arn:aws(-[a-z]+)*:kms:[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]:[0-9]{12}:key/[A-Za-z0-9-]+$",
    "a KMS key ARN such as arn:aws:kms:us-west-2:123456789012:key/<key-id>",
    2048,  # the KMS API's limit of a KeyId, which may be a key ARN
)
EKS_CLUSTER_NAME = grammar(
    r"^[A-Za-z][A-Za-z0-9-]{0,99}$",
    "an EKS cluster name: a letter, then up to 99 letters, digits or '-' (eksctl names its "
    "CloudFormation stacks after it, which take no '_')",
    100,  # EKS's limit of a cluster name
)
FILE_SYSTEM_ID = grammar(r"^fs-[0-9a-f]{8,40}$",
                         "an EFS file system id such as fs-0123456789abcdef0",
                         128)  # the EFS API's limit of a FileSystemId
# EC2 documents no limit; the longest type today has 19 characters (u7in-32tb.224xlarge).
INSTANCE_TYPE = grammar(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$", "an EC2 instance type such as m3.large",
                        DNS_LABEL_MAX)
EFS_DNS_NAME = grammar(
    r"^fs-[0-9a-f]{8,40}\.efs\.[a-z]{2}(-gov)?-[a-z]+-[0-9]\.amazonaws\.com$",
    "an EFS DNS name such as fs-2cbf7385.efs.us-west-2.amazonaws.com",
    DNS_NAME_MAX,
)
HOSTED_ZONE_ID = grammar(r"^[A-Z0-9]{1,32}$", "a Route 53 hosted zone id such as Z2ABCDEF12345",
                         32)  # Route 53's limit of a hosted zone id
S3_URI = grammar(
    r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]*)?$",
    "an S3 URI such as s3://my-bucket/prefix",
    len("s3://") + 63 + 1 + 1024,  # S3's longest bucket name, '/', its longest object key
)
