"""Grammars of the spec's string fields, each with the words an error message uses for it."""

from __future__ import annotations

from typing import NamedTuple


class Pattern(NamedTuple):
    regex: str
    meaning: str
    # Checked before the regex: Python's re keeps backtracking state for every repetition of a
    # group, so IMAGE alone took 450 MB on a 1 MB value. Each is the most the value's own system
    # accepts, and never less than the longest match of a regex that bounds its own length.
    max_length: int


def grammar(regex: str, meaning: str, max_length: int) -> Pattern:
    """A full-string pattern. Python's `$` also matches before a final newline, so "eth0\\n"
    would pass; the look-ahead refuses it (and means the same to JSON Schema's ECMA regexes)."""
    assert regex.startswith("^") and regex.endswith("$")
    return Pattern(regex[:-1] + r"(?!\n)$", meaning, max_length)


# Lengths of DNS (RFC 1123; Kubernetes' DNS1123LabelMaxLength and DNS1123SubdomainMaxLength).
DNS_LABEL_MAX = 63
DNS_NAME_MAX = 253


DNS_LABEL = grammar(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
    "starting and ending with a letter or digit",
    DNS_LABEL_MAX,
)
# Pods are named <job>-<5 random chars>; keep their names (and hostnames) within 63 characters.
JOB_NAME = grammar(
    r"^[a-z0-9]([-a-z0-9]{0,55}[a-z0-9])?$",
    "a DNS-1123 label of at most 57 characters (pod names add 6): lower-case letters, digits "
    "and '-', starting and ending with a letter or digit",
    57,  # this grammar's own bound; Kubernetes' is 63, as its job-name label holds the name
)
DNS_SUBDOMAIN = grammar(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'",
    DNS_NAME_MAX,
)
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
KEY_NAME = grammar(r"^[\x20-\x7e]{1,255}$", "an EC2 key pair name (1-255 printable ASCII)",
                   255)  # EC2's limit of a key pair name
KMS_KEY_ARN = grammar(
    r"^arn:aws(-[a-z]+)*:kms:[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]:[0-9]{12}:key/[A-Za-z0-9-]+$",
    "a KMS key ARN such as arn:aws:kms:us-west-2:123456789012:key/<key-id>",
    2048,  # the KMS API's limit of a KeyId, which may be a key ARN
)
HOSTNAME = grammar(
    r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$",
    "a DNS name such as paddle or k8s.example.com",
    DNS_NAME_MAX,
)
S3_URI = grammar(
    r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]*)?$",
    "an S3 URI such as s3://my-bucket/prefix",
    len("s3://") + 63 + 1 + 1024,  # S3's longest bucket name, '/', its longest object key
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
# Bounded, so that comparing two quantities is cheap arithmetic: 19 digits and an exponent of
# two hold every size a volume has (Kubernetes itself keeps quantities in an int64 mostly).
QUANTITY = grammar(
    r"^\+?([0-9]{1,19}(\.[0-9]{0,9})?|\.[0-9]{1,9})"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$",
    "a Kubernetes quantity such as 50Gi, 100G or 512Mi (at most 19 digits before the point, 9 "
    "after it, and an exponent of at most 2 digits)",
    len("+") + 19 + len(".") + 9 + len("e+99"),  # this grammar's own bound
)
# The distribution reference grammar: [domain[:port]/]component(/component)*[:tag][@digest]
# (a first part is a domain only with a '.', a port, or as localhost; else it is a component)
_HOST = r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
_DOMAIN = rf"(localhost(:[0-9]+)?|{_HOST}(\.{_HOST})+(:[0-9]+)?|{_HOST}:[0-9]+)"
_COMPONENT = r"[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*"
IMAGE = grammar(
    rf"^({_DOMAIN}/)?{_COMPONENT}(/{_COMPONENT})*(:[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(@sha256:[a-f0-9]{64})?$",
    "an image reference such as paddlepaddle/paddle-tutorial:k8s_train",
    # the distribution reference's limits: a name of 255 (NameTotalLengthMax), ':' and a tag
    # of 128, '@sha256:' and 64 hex digits
    255 + 1 + 128 + len("@sha256:") + 64,
)
NIC = grammar(r"^[A-Za-z0-9_.:-]{1,15}$", "a network interface name such as eth0",
              15)  # Linux's IFNAMSIZ, 16 with the NUL
PATH_SEGMENT = grammar(
    r"^(?!\.\.?$)[A-Za-z0-9_.-]{1,255}$", "one directory name (no '/' and not '.' or '..')",
    255,  # Linux's NAME_MAX
)
ABSOLUTE_PATH = grammar(
    r"^(/(?!\.\.?(/|$))[A-Za-z0-9_.-]+)+$", "an absolute path without '.' or '..' parts",
    4095,  # Linux's PATH_MAX, 4096 with the NUL
)
CIDR = grammar(r"^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$", "an IPv4 CIDR such as 10.0.0.0/16",
               len("255.255.255.255/32"))
IPV4 = grammar(r"^([0-9]{1,3}\.){3}[0-9]{1,3}$", "an IPv4 address such as 10.3.0.10",
               len("255.255.255.255"))
HOSTED_ZONE_ID = grammar(r"^[A-Z0-9]{1,32}$", "a Route 53 hosted zone id such as Z2ABCDEF12345",
                         32)  # Route 53's limit of a hosted zone id
LABEL_KEY = grammar(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
    "a label key such as disktype or node.kubernetes.io/instance-type",
    DNS_NAME_MAX + 1 + DNS_LABEL_MAX,  # Kubernetes' qualified name: a DNS prefix, '/', a name
)
LABEL_VALUE = grammar(
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
    "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit",
    DNS_LABEL_MAX,  # Kubernetes' LabelValueMaxLength
)
KUBE_VERSION = grammar(r"^1\.[0-9]{1,2}$", "a Kubernetes minor release such as 1.34",
                       len("1.99"))  # this grammar's own bound

MEANING_BY_REGEX = {
    value.regex: value.meaning for value in list(globals().values()) if isinstance(value, Pattern)
}
