"""Grammars of the spec's string fields, each with the words an error message uses for it."""

from __future__ import annotations

from typing import NamedTuple


class Pattern(NamedTuple):
    regex: str
    meaning: str


def grammar(regex: str, meaning: str) -> Pattern:
    """A full-string pattern. Python's `$` also matches before a final newline, so "eth0\\n"
    would pass; the look-ahead refuses it (and means the same to JSON Schema's ECMA regexes)."""
    assert regex.startswith("^") and regex.endswith("$")
    return Pattern(regex[:-1] + r"(?!\n)$", meaning)


DNS_LABEL = grammar(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "a DNS-1123 label: at most 63 lower-case letters, digits and '-', "
    "starting and ending with a letter or digit",
)
# Pods are named <job>-<5 random chars>; keep their names (and hostnames) within 63 characters.
JOB_NAME = grammar(
    r"^[a-z0-9]([-a-z0-9]{0,55}[a-z0-9])?$",
    "a DNS-1123 label of at most 57 characters (pod names add 6): lower-case letters, digits "
    "and '-', starting and ending with a letter or digit",
)
DNS_SUBDOMAIN = grammar(
    r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.'",
)
STACK_NAME = grammar(
    r"^[A-Za-z][A-Za-z0-9-]{0,127}$",
    "a CloudFormation stack name: a letter, then up to 127 letters, digits or '-' (no '_')",
)
REGION = grammar(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]$", "an AWS region such as us-west-2")
ZONE = grammar(
    r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9][a-z]$", "an availability zone such as us-west-2a"
)
ACCOUNT_ID = grammar(r"^[0-9]{12}$", "an AWS account id of exactly 12 digits")
KEY_NAME = grammar(r"^[\x20-\x7e]{1,255}$", "an EC2 key pair name (1-255 printable ASCII)")
KMS_KEY_ARN = grammar(
    r"^arn:aws(-[a-z]+)*:kms:[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]:[0-9]{12}:key/[A-Za-z0-9-]+$",
    "a KMS key ARN such as arn:aws:kms:us-west-2:123456789012:key/<key-id>",
)
HOSTNAME = grammar(
    r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$",
    "a DNS name such as paddle or k8s.example.com",
)
S3_URI = grammar(
    r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[A-Za-z0-9!_.*'()/-]*)?$",
    "an S3 URI such as s3://my-bucket/prefix",
)
EKS_CLUSTER_NAME = grammar(
    r"^[A-Za-z][A-Za-z0-9-]{0,99}$",
    "an EKS cluster name: a letter, then up to 99 letters, digits or '-' (eksctl names its "
    "CloudFormation stacks after it, which take no '_')",
)
FILE_SYSTEM_ID = grammar(r"^fs-[0-9a-f]{8,40}$",
                         "an EFS file system id such as fs-0123456789abcdef0")
INSTANCE_TYPE = grammar(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$", "an EC2 instance type such as m3.large")
EFS_DNS_NAME = grammar(
    r"^fs-[0-9a-f]{8,40}\.efs\.[a-z]{2}(-gov)?-[a-z]+-[0-9]\.amazonaws\.com$",
    "an EFS DNS name such as fs-2cbf7385.efs.us-west-2.amazonaws.com",
)
# Bounded, so that comparing two quantities is cheap arithmetic: 19 digits and an exponent of
# two hold every size a volume has (Kubernetes itself keeps quantities in an int64 mostly).
QUANTITY = grammar(
    r"^\+?([0-9]{1,19}(\.[0-9]{0,9})?|\.[0-9]{1,9})"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$",
    "a Kubernetes quantity such as 50Gi, 100G or 512Mi (at most 19 digits before the point, 9 "
    "after it, and an exponent of at most 2 digits)",
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
)
NIC = grammar(r"^[A-Za-z0-9_.:-]{1,15}$", "a network interface name such as eth0")
PATH_SEGMENT = grammar(
    r"^(?!\.\.?$)[A-Za-z0-9_.-]{1,255}$", "one directory name (no '/' and not '.' or '..')"
)
ABSOLUTE_PATH = grammar(
    r"^(/(?!\.\.?(/|$))[A-Za-z0-9_.-]+)+$", "an absolute path without '.' or '..' parts"
)
CIDR = grammar(r"^([0-9]{1,3}\.){3}[0-9]{1,3}/[0-9]{1,2}$", "an IPv4 CIDR such as 10.0.0.0/16")
IPV4 = grammar(r"^([0-9]{1,3}\.){3}[0-9]{1,3}$", "an IPv4 address such as 10.3.0.10")
HOSTED_ZONE_ID = grammar(r"^[A-Z0-9]{1,32}$", "a Route 53 hosted zone id such as Z2ABCDEF12345")
LABEL_KEY = grammar(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$",
    "a label key such as disktype or node.kubernetes.io/instance-type",
)
LABEL_VALUE = grammar(
    r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$",
    "a label value: at most 63 letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit",
)
KUBE_VERSION = grammar(r"^1\.[0-9]{1,2}$", "a Kubernetes minor release such as 1.34")

MEANING_BY_REGEX = {
    value.regex: value.meaning for value in list(globals().values()) if isinstance(value, Pattern)
}
