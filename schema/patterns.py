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


# Every grammar's words, by its regex: a problem names what a value should be with them. Filled
# by `grammar`, wherever a grammar is defined (a profile's own formats register themselves).
MEANING_BY_REGEX: dict[str, str] = {}


def grammar(regex: str, meaning: str, max_length: int) -> Pattern:
    """A full-string pattern, registered with its words. Python's `$` also matches before a
    final newline, so "eth0\\n" would pass; the look-ahead refuses it (and means the same to
    JSON Schema's ECMA regexes)."""
    assert regex.startswith("^") and regex.endswith("$")
    pattern = Pattern(regex[:-1] + r"(?!\n)$", meaning, max_length)
    MEANING_BY_REGEX[pattern.regex] = meaning
    return pattern


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
HOSTNAME = grammar(
    r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*$",
    "a DNS name such as paddle or k8s.example.com",
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
# An argument of a container's process. The runtime execs it as a C string, which ends at a
# NUL: runc, in Go, refuses one with a NUL (syscall.ByteSliceFromString: "If s contains a NUL
# byte at any location, it returns (nil, EINVAL)"), so the container never starts.
ARGUMENT = grammar(
    r"^[^\x00]*$",
    "an argument without a NUL character (a process's arguments are C strings, which a NUL "
    "ends: the container could not start)",
    4096,  # this field's own bound
)
KUBE_VERSION = grammar(r"^1\.[0-9]{1,2}$", "a Kubernetes minor release such as 1.34",
                       len("1.99"))  # this grammar's own bound
