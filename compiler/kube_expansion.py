"""The kubelet's `$(VAR)` expansion of a container's command, args and env values, and the
escaping that makes a word pass through it unchanged.

The kubelet expands command and args against the container's environment (its env, in order,
and the service-link variables: KUBERNETES_SERVICE_HOST and the rest of the `kubernetes`
Service's in every pod, enableServiceLinks or not). Its expansion is
k8s.io/kubernetes third_party/forked/golang/expansion/expand.go (Expand, tryReadVariableName;
read at commit fde22c3f9aacfd260225a9741de123a41157b7c0, with the rune fix of
kubernetes/kubernetes#136325, which the release branches from 1.34 on carry):
- `$(NAME)` becomes NAME's value; a NAME that is not defined stays `$(NAME)`, as written;
- `$$` becomes `$` (and the character after it is not read again);
- any other `$`: `$x`, an unclosed `$(`, a `$` at the end, stays as written.
"""

from __future__ import annotations

from collections.abc import Mapping

OPERATOR, OPENER, CLOSER = "$", "(", ")"


def expanded(text: str, *contexts: Mapping[str, str]) -> str:
    """`text` as the kubelet expands it: each `$(NAME)` from the first context that defines
    NAME (none: left as written), `$$` as `$`, any other `$` as written."""
    out: list[str] = []
    cursor = 0
    while cursor < len(text):
        if text[cursor] != OPERATOR or cursor + 1 == len(text):
            out.append(text[cursor])
            cursor += 1
            continue
        following = text[cursor + 1]
        close = text.find(CLOSER, cursor + 2) if following == OPENER else -1
        if following == OPERATOR:
            out.append(OPERATOR)
        elif close >= 0:
            name = text[cursor + 2:close]
            out.append(next((c[name] for c in contexts if name in c), f"$({name})"))
            cursor = close + 1
            continue
        else:  # `$x`, or `$(` that nothing closes: the operator and the next character
            out.append(OPERATOR + following)
        cursor += 2
    return "".join(out)


def literal(text: str) -> str:
    """`text` written so that the kubelet's expansion gives it back unchanged, whatever the
    environment: every `$` doubled (`$$` is the one escape; each pair is read as one)."""
    return text.replace(OPERATOR, OPERATOR * 2)
