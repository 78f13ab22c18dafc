"""A stateful stand-in for aws, eksctl, kubectl, curl, docker, kube-aws, kube-up.sh, ssh and dig,
for running the runbooks' blocks and run.sh's phases in tests. It logs its argv, keeps what
exists in a JSON state file, and answers as the real tool does, "exists already" and "not
found" included; a call it has no answer for fails loudly (exit 99).

Installed as one script under each tool's name (install_stubs of tests/profile_harness.py).

The state (STUB_STATE, else STUB_LOG + ".state"; initial_state() makes a first one): eksctl's
clusters and node groups, CloudFormation stacks (their parameters, outputs, exports, imports and
failed events), EFS file systems (their owner tag and mount targets), ECR repositories, IAM
roles and groups (their policies and users), CloudWatch log groups, the AWS CLI profiles, the
Kubernetes objects by kind, namespace and name (what `kubectl create|apply -f` reads from the
manifests, the releases `kubectl apply` installs, the pods a run's controller makes), and
whether the cluster's API answers.

How it behaves, from the environment:
- STUB_RUN_END: how a run (or a data Job) ends: succeeded (the default), failed, or deleted
  (by someone else, `./run.sh stop` in another terminal: the object and its pods go). A run ends
  when its pod's log is followed to its end (`kubectl logs -f`), or at the STUB_RUN_POLLS-th
  query of its conditions (default 1).
- STUB_FOLLOW=interrupt: `kubectl logs -f` is interrupted as Ctrl-C does, SIGINT to its process
  group, while the run goes on.
- STUB_NEVER_READY: nothing becomes ready ("1"), or only what it lists of pods (stay Pending),
  admission (a run's pods never appear: its controller makes none), runs (reach no condition),
  mounts (mount targets stay creating), rollouts (`kubectl rollout status` times out), webhooks
  (refuse dry runs), deletions (deleted pods never go).
- STUB_FAIL: the calls that fail as AWS fails them: cloudformation-deploy (the stack rolls
  back), eksctl-create-cluster (its stack rolls back), eksctl-delete-cluster (the node group's
  stack fails to delete), eksctl-delete-cluster-stack (the control plane goes, then the
  cluster's stack fails to delete its VPC).
- STUB_MADE_FILE_SYSTEM: the id of a file system a stack makes.
- Older tests' overrides, each applied only where set: STUB_JOB_STATE (the conditions of every
  run), STUB_FAILED_WHY, STUB_RESTARTS (a JobSet's status.restarts), STUB_WORKLOAD_ACTIVE, STUB_PODS
  (empty: runs make no pods), STUB_KMS_ARN, STUB_EFS_DNS, STUB_KUBE_AWS (kube-aws's release).

Where the real tools' words come from is cited at each answer: the AWS CLI v2 (its errors are
"An error occurred (CODE) when calling the OPERATION operation: MESSAGE", exit 254 for an error
of the service, 255 for a failed `cloudformation deploy`; awscli/customizations/cloudformation/
exceptions.py and deployer.py), kubectl (cli-runtime's "Error from server (REASON): ..."),
eksctl (issues eksctl-io/eksctl#4662 and #7718 quote its errors).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import sys

# Each call is a new interpreter: only what every call needs is imported here (tarfile,
# hashlib, pathlib, typing and YAML cost milliseconds a call, which a runbook makes hundreds of).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    State = dict[str, Any]
    Obj = dict[str, Any]

ELB = "paddle-cl-ElbAPISe-EEOI3EZPR86C-531251350.us-west-2.elb.amazonaws.com"
ACCOUNT = "123456789012"
MADE_FILE_SYSTEM = "fs-0fedcba9876543210"


class Answer:
    """What a call prints and how it exits; SIGINT to the process group after, if `interrupt`."""

    def __init__(self, code: int = 0, out: str | bytes = "", err: str = "",
                 interrupt: bool = False) -> None:
        self.code, self.out, self.err, self.interrupt = code, out, err, interrupt


def ok(out: str | bytes = "") -> Answer:
    return Answer(0, out)


def error(err: str, code: int = 1, out: str = "") -> Answer:
    return Answer(code, out, err if err.endswith("\n") else err + "\n")


def unknown(tool: str, argv: list[str]) -> Answer:
    return error(f"stub: no answer for {tool} {' '.join(argv)}", 99)


# --- the state ------------------------------------------------------------------------------

def initial_state(*, api: bool | None = None, profiles: list[str] | None = None,
                  file_systems: Iterable[str] = (), namespaces: Iterable[str] = (),
                  storage_classes: Iterable[str] = (), nodes: int = 0,
                  claims: Iterable[tuple[str, str]] = (),
                  local_queues: Iterable[tuple[str, str]] = (),
                  releases: Iterable[str] = ()) -> State:
    """What exists before the runbook runs: whether the cluster's API answers (None: always, as
    for the older profiles, whose cluster tool is not modelled), the AWS CLI profiles (None: any
    profile will do), the file systems the user brought, and the namespaces, StorageClasses,
    nodes, claims and LocalQueues of a cluster that exists, and the releases installed on it
    (RELEASES' names)."""
    state: State = {"objects": {}, "clusters": {}, "stacks": {}, "file_systems": {},
                    "repositories": [], "roles": {}, "groups": {}, "log_groups": [],
                    "aws_config": {}, "counter": 0, "nodes": nodes}
    if api is not None:
        state["api"] = api
    if profiles is not None:
        state["profiles"] = profiles
    for fs in file_systems:
        state["file_systems"][fs] = {"owner": "", "mount_targets": []}
    for namespace in namespaces:
        put(state, new_object("Namespace", "", namespace, {}))
    for name in storage_classes:
        put(state, new_object("StorageClass", "", name, {}))
    for namespace, name in claims:
        put(state, new_object("PersistentVolumeClaim", namespace, name, {}))
    for release in releases:
        install(state, release)
    for namespace, name in local_queues:
        for crd in RELEASES["kueue"][0]:
            put(state, new_object("CustomResourceDefinition", "", crd, {}))
        put(state, new_object("LocalQueue", namespace, name, {}))
    return state


def state_path() -> str:
    return os.environ.get("STUB_STATE") or os.environ["STUB_LOG"] + ".state"


def read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write(path: str, data: str | bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


def sha256(data: str | bytes) -> str:
    import hashlib

    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def with_state(act: Callable[[State], Answer]) -> Answer:
    """`act` on the state, read and written back under a lock (a pipeline runs two stand-ins
    at once)."""
    path = state_path()
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(read(path)) if os.path.exists(path) else initial_state()
        answer = act(state)
        write(path, json.dumps(state, indent=1, sort_keys=True))
    return answer


def next_id(state: State, salt: str) -> str:
    state["counter"] += 1
    return sha256(f"{salt}/{state['counter']}")


def env_list(name: str) -> set[str]:
    return {word.strip() for word in os.environ.get(name, "").split(",") if word.strip()}


def never_ready(what: str) -> bool:
    """Whether STUB_NEVER_READY keeps `what` from ever becoming ready."""
    listed = env_list("STUB_NEVER_READY")
    return bool(listed & {"1", "all", what})


def never_ready_alone(what: str) -> bool:
    """Whether STUB_NEVER_READY names `what` itself (not only "1": some of what it does would
    keep the others from being reached)."""
    return what in env_list("STUB_NEVER_READY")


def failing(what: str) -> bool:
    return what in env_list("STUB_FAIL")


def log(tool: str, argv: list[str]) -> None:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps([tool, *argv]) + "\n")
    if tool in ("aws", "eksctl"):  # and the AWS CLI profile each AWS call runs under
        with open(os.environ["STUB_LOG"] + ".profiles", "a", encoding="utf-8") as handle:
            handle.write(json.dumps([os.environ.get("AWS_PROFILE", ""), tool, *argv]) + "\n")


# --- downloads ------------------------------------------------------------------------------

def tar_gz(members: dict[str, bytes], executable: bool = False) -> bytes:
    """A gzipped tar, the same bytes every time (a checksum file is fetched apart from it)."""
    import gzip
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if executable else 0o644
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def wrapper(tool: str) -> bytes:
    """What a download installs: a tool that is this stand-in under the tool's name."""
    here = os.path.dirname(sys.argv[0])
    return f'#!/bin/sh\nexec "{os.path.join(here, tool)}" "$@"\n'.encode()


def option(argv: list[str], name: str) -> str | None:
    """The value of option `name`, written `name value` or `name=value`."""
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(name + "="):
            return word[len(name) + 1:]
    return None


EKSCTL_TARBALL = "eksctl_Linux_amd64.tar.gz"


def curl(argv: list[str], state: State) -> Answer:
    url = next(w for w in argv if w.startswith("https://"))
    target = option(argv, "-o") or option(argv, "-fLo")
    if "-fLO" in argv or "-O" in argv:  # the file by the URL's name, into --output-dir
        directory = option(argv, "--output-dir") or "."
        body = curl_body(url)
        if body is None:
            return error(f"curl: (22) The requested URL returned error: 404 ({url})", 22)
        write(os.path.join(directory, url.rsplit("/", 1)[1]), body)
        return ok()
    if url.endswith("/kubectl") and target:
        write(target, wrapper("kubectl"))
        return ok()
    body = curl_body(url)
    return ok(body) if body is not None else error(f"stub: no download {url}", 22)


def curl_body(url: str) -> bytes | None:
    if url.endswith("/" + EKSCTL_TARBALL):
        return tar_gz({"eksctl": wrapper("eksctl")}, True)
    if url.endswith("/eksctl_checksums.txt"):  # goreleaser's: "<sha256>  <file>" a line
        digest = sha256(tar_gz({"eksctl": wrapper("eksctl")}, True))
        return (f"{'0' * 64}  eksctl_Darwin_arm64.tar.gz\n"
                f"{digest}  {EKSCTL_TARBALL}\n").encode()
    if url.endswith("/kubectl.sha256"):  # dl.k8s.io: the digest alone
        return sha256(wrapper("kubectl")).encode()
    if url.startswith("https://dl.k8s.io/release/stable-") and url.endswith(".txt"):
        return f"v{url.rsplit('stable-', 1)[1].removesuffix('.txt')}.2".encode()
    if url.endswith("kube-aws-linux-amd64.tar.gz"):
        return tar_gz({"linux-amd64/kube-aws": wrapper("kube-aws")}, True)
    if url.endswith("/kubernetes.tar.gz"):
        return tar_gz({"kubernetes/cluster/kube-up.sh": wrapper("kube-up.sh"),
                       "kubernetes/cluster/kube-down.sh": wrapper("kube-down.sh"),
                       "kubernetes/platforms/linux/amd64/kubectl": wrapper("kubectl")}, True)
    return None


# --- AWS ------------------------------------------------------------------------------------

def aws_error(code: str, operation: str, message: str, exit_code: int = 254) -> Answer:
    """The AWS CLI v2's report of an error the service returned (exit 254)."""
    camel = "".join(part.capitalize() for part in operation.split("-"))
    return error(f"\nAn error occurred ({code}) when calling the {camel} operation: {message}",
                 exit_code)


def aws_options(argv: list[str]) -> dict[str, list[str]]:
    """Each --option's values (the words after it up to the next option)."""
    found: dict[str, list[str]] = {}
    key = ""
    for word in argv:
        if word.startswith("--"):
            key, _, value = word[2:].partition("=")
            found[key] = [value] if value else []
        elif key:
            found[key].append(word)
    return found


def one(options: dict[str, list[str]], key: str) -> str:
    values = options.get(key) or [""]
    return values[0]


def profile_known(state: State, profile: str) -> bool:
    """Whether the AWS CLI has the profile: one the person had, or one `aws configure set` gave
    a role and a source profile it has."""
    if "profiles" not in state or not profile:
        return True
    if profile in state["profiles"]:
        return True
    config = state["aws_config"].get(profile, {})
    return "role_arn" in config and config.get("source_profile") in state["profiles"]


def aws(argv: list[str], state: State) -> Answer:
    service, operation = [*argv, "", ""][:2]
    if service == "configure" and operation == "set":
        profile = option(argv, "--profile") or "default"
        rest = [w for w in argv[2:] if w not in ("--profile", profile)]
        state["aws_config"].setdefault(profile, {})[rest[0]] = rest[1]
        return ok()
    profile = os.environ.get("AWS_PROFILE", "")
    if not profile_known(state, profile):  # botocore's ProfileNotFound
        return error(f"\nThe config profile ({profile}) could not be found", 255)
    if (service, operation) == ("cloudformation", "wait"):
        return cloudformation_wait(argv, state) or unknown("aws", argv)
    options = aws_options(argv[2:])
    handler = AWS_SERVICES.get(service)
    if handler is not None:
        return handler(operation, options, state) or unknown("aws", argv)
    return legacy_aws(argv, state)


def policy_document(operation: str, options: dict[str, list[str]], key: str) -> Answer | None:
    """A file:// document must be there: the CLI reads it before it calls AWS."""
    value = one(options, key)
    if value.startswith("file://") and not os.path.isfile(value[len("file://"):]):
        return error(f"\nError parsing parameter '--{key}': Unable to load paramfile {value}: "
                     f"[Errno 2] No such file or directory: '{value[len('file://'):]}'", 252)
    return None


def iam(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    """Roles and groups, as IAM answers: get-* of a missing one NoSuchEntity, create-* of an
    existing one EntityAlreadyExists, attach/put/add again no error, delete-* DeleteConflict
    while the entity still has policies or users ("Cannot delete entity, must detach all
    policies first." and "... must delete policies first.", as quoted in
    hashicorp/terraform-provider-aws#883 and awslabs/aws-orbit-workbench#633)."""
    roles, groups = state["roles"], state["groups"]
    role, group = one(options, "role-name"), one(options, "group-name")
    for key in ("assume-role-policy-document", "policy-document"):
        unreadable = policy_document(operation, options, key)
        if unreadable:
            return unreadable
    if operation == "create-role":
        if role in roles:
            return aws_error("EntityAlreadyExists", operation,
                             f"Role with name {role} already exists.")
        roles[role] = {"attached": [], "inline": []}
        return ok(json.dumps({"Role": {"RoleName": role,
                                       "Arn": f"arn:aws:iam::{ACCOUNT}:role/{role}"}}))
    if operation == "create-group":
        if group in groups:
            return aws_error("EntityAlreadyExists", operation,
                             f"Group with name {group} already exists.")
        groups[group] = {"attached": [], "inline": [], "users": []}
        return ok(json.dumps({"Group": {"GroupName": group}}))
    if operation.endswith("-role-policy") or operation.endswith("-role-policies") or \
            operation in ("get-role", "delete-role"):
        if role not in roles:
            return aws_error("NoSuchEntity", operation,
                             f"The role with name {role} cannot be found.")
        return role_call(operation, options, roles, role)
    if operation in ("get-group", "delete-group") or "group-policy" in operation or \
            operation.endswith("-to-group") or operation.endswith("-from-group"):
        if group not in groups:
            return aws_error("NoSuchEntity", operation,
                             f"The group with name {group} cannot be found.")
        return group_call(operation, options, groups, group)
    return None


def role_call(operation: str, options: dict[str, list[str]], roles: State,
              role: str) -> Answer | None:
    entry = roles[role]
    arn, name = one(options, "policy-arn"), one(options, "policy-name")
    query = one(options, "query")
    if operation == "get-role":
        return ok(json.dumps({"Role": {"RoleName": role}}))
    if operation == "attach-role-policy":
        entry["attached"] = sorted({*entry["attached"], arn})
    elif operation == "put-role-policy":
        entry["inline"] = sorted({*entry["inline"], name})
    elif operation == "update-assume-role-policy":
        pass  # the trust policy: replaced, as often as asked
    elif operation == "list-attached-role-policies" and query == "AttachedPolicies[].PolicyArn":
        return ok("\t".join(entry["attached"]) + "\n")
    elif operation == "list-role-policies" and query == "PolicyNames[]":
        return ok("\t".join(entry["inline"]) + "\n")
    elif operation == "detach-role-policy":
        if arn not in entry["attached"]:
            return aws_error("NoSuchEntity", operation, f"Policy {arn} was not found.")
        entry["attached"].remove(arn)
    elif operation == "delete-role-policy":
        if name not in entry["inline"]:
            return aws_error("NoSuchEntity", operation,
                             f"The role policy with name {name} cannot be found.")
        entry["inline"].remove(name)
    elif operation == "delete-role":
        if entry["attached"]:
            return aws_error("DeleteConflict", operation,
                             "Cannot delete entity, must detach all policies first.", 254)
        if entry["inline"]:
            return aws_error("DeleteConflict", operation,
                             "Cannot delete entity, must delete policies first.")
        del roles[role]
    else:
        return None
    return ok()


def group_call(operation: str, options: dict[str, list[str]], groups: State,
               group: str) -> Answer | None:
    entry = groups[group]
    arn, name, user = (one(options, "policy-arn"), one(options, "policy-name"),
                       one(options, "user-name"))
    if operation == "get-group":
        if one(options, "query") == "Users[].UserName":
            return ok("\t".join(entry["users"]) + "\n")
        return ok(json.dumps({"Group": {"GroupName": group},
                              "Users": [{"UserName": u} for u in entry["users"]]}))
    if operation == "attach-group-policy":
        entry["attached"] = sorted({*entry["attached"], arn})
    elif operation == "detach-group-policy":
        if arn not in entry["attached"]:
            return aws_error("NoSuchEntity", operation, f"Policy {arn} was not found.")
        entry["attached"].remove(arn)
    elif operation == "put-group-policy":
        entry["inline"] = sorted({*entry["inline"], name})
    elif operation == "delete-group-policy":
        if name not in entry["inline"]:
            return aws_error("NoSuchEntity", operation,
                             f"The group policy with name {name} cannot be found.")
        entry["inline"].remove(name)
    elif operation == "add-user-to-group":
        entry["users"] = sorted({*entry["users"], user})
    elif operation == "remove-user-from-group":
        if user not in entry["users"]:
            return aws_error("NoSuchEntity", operation,
                             f"The user with name {user} cannot be found.")
        entry["users"].remove(user)
    elif operation == "delete-group":
        for held, why in (("users", "must remove users from group first"),
                          ("inline", "must delete policies first"),
                          ("attached", "must detach all policies first")):
            if entry[held]:
                return aws_error("DeleteConflict", operation, f"Cannot delete entity, {why}.")
        del groups[group]
    else:
        return None
    return ok()


def ecr(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    repositories: list[str] = state["repositories"]
    if operation == "get-login-password":
        return ok("eyJwYXlsb2FkIjoi\n")
    if operation == "describe-repositories":
        missing = [r for r in options.get("repository-names", []) if r not in repositories]
        if missing:
            return aws_error("RepositoryNotFoundException", operation,
                             f"The repository with name '{missing[0]}' does not exist in the "
                             f"registry with id '{ACCOUNT}'")
        return ok(json.dumps({"repositories": [{"repositoryName": r}
                                               for r in options.get("repository-names", [])]}))
    if operation == "create-repository":
        name = one(options, "repository-name")
        if name in repositories:
            return aws_error("RepositoryAlreadyExistsException", operation,
                             f"The repository with name '{name}' already exists in the "
                             f"registry with id '{ACCOUNT}'")
        repositories.append(name)
        return ok(json.dumps({"repository": {"repositoryName": name}}))
    return None


def eks(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    clusters = state["clusters"]
    if operation == "describe-cluster":
        name = one(options, "name")
        if name not in clusters:
            return aws_error("ResourceNotFoundException", operation,
                             f"No cluster found for name: {name}.")
        if one(options, "query") == "cluster.status":
            return ok("ACTIVE\n")
        return ok(json.dumps({"cluster": {"name": name, "status": "ACTIVE"}}))
    if operation == "describe-nodegroup":
        name, group = one(options, "cluster-name"), one(options, "nodegroup-name")
        groups = clusters.get(name, {}).get("nodegroups", {})
        if name not in clusters:
            return aws_error("ResourceNotFoundException", operation,
                             f"No cluster found for name: {name}.")
        if group not in groups:
            return aws_error("ResourceNotFoundException", operation,
                             f"No node group found for name: {group}.")
        if one(options, "query") == "nodegroup.scalingConfig.desiredSize":
            return ok(f"{groups[group]}\n")
    return None


def ec2(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    if operation == "describe-nat-gateways" and one(options, "query") == "length(NatGateways)":
        # eksctl's VPC: one NAT gateway (vpc.nat.gateway Single), tagged with the cluster
        name = next((f.rsplit("Values=", 1)[1] for f in options.get("filter", [])
                     if "cluster-name" in f), "")
        return ok(f"{1 if name in state['clusters'] else 0}\n")
    return None


def logs(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    if operation == "delete-log-group":
        group = one(options, "log-group-name")
        if group not in state["log_groups"]:
            return aws_error("ResourceNotFoundException", operation,
                             "The specified log group does not exist.")
        state["log_groups"].remove(group)
        return ok()
    return None


# --- CloudFormation and EFS -----------------------------------------------------------------

LIVE = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "ROLLBACK_COMPLETE",
        "DELETE_FAILED")


def stack_exports(state: State) -> set[str]:
    return {export for stack in state["stacks"].values()
            if stack["status"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE", "DELETE_FAILED")
            for export in stack.get("exports", [])}


def importers(state: State, name: str) -> list[str]:
    """The stacks that import an export of stack `name`."""
    exports = set(state["stacks"].get(name, {}).get("exports", []))
    return [other for other, stack in state["stacks"].items()
            if other != name and exports & set(stack.get("imports", []))]


def made_file_system() -> str:
    dns = os.environ.get("STUB_EFS_DNS", "")
    return os.environ.get("STUB_MADE_FILE_SYSTEM") or (dns.split(".")[0] if dns else
                                                        MADE_FILE_SYSTEM)


def cloudformation(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    stacks = state["stacks"]
    name = one(options, "stack-name")
    stack = stacks.get(name)
    # the very message awscli's deployer.py (has_stack) looks for
    missing = aws_error("ValidationError", operation, f"Stack with id {name} does not exist")
    if operation == "deploy":
        return deploy(name, options, state)
    if operation == "describe-stacks":
        if stack is None:
            return missing
        query = one(options, "query")
        found = re.fullmatch(r"Stacks\[0\]\.Outputs\[\?OutputKey=='(\w+)'\]\.OutputValue", query)
        if found:
            return ok(f"{stack['outputs'].get(found[1], 'None')}\n")
        if query == "Stacks[0].StackStatus":
            return ok(f"{stack['status']}\n")
        if not query:
            return ok(json.dumps({"Stacks": [{"StackName": name,
                                              "StackStatus": stack["status"]}]}))
        return None
    if operation == "describe-stack-events":
        if stack is None:
            return missing
        return ok("".join(f"{logical}\t{reason}\n" for logical, reason in stack["events"]))
    if operation == "delete-stack":  # no error for a stack that is not there, as AWS answers
        if stack is not None:
            delete_stack(state, name)
        return ok()
    return None


def cloudformation_wait(argv: list[str], state: State) -> Answer | None:
    """`aws cloudformation wait stack-delete-complete`: done at once where the stack is gone
    (its DescribeStacks ValidationError is the waiter's success), failed where its deletion
    failed (botocore's WaiterError)."""
    options = aws_options(argv[3:])
    if argv[2] != "stack-delete-complete":
        return None
    stack = state["stacks"].get(one(options, "stack-name"))
    if stack is not None and stack["status"] == "DELETE_FAILED":
        return error('\nWaiter StackDeleteComplete failed: Waiter encountered a terminal failure '
                     'state: For expression "Stacks[].StackStatus" we matched expected path: '
                     '"DELETE_FAILED" at least once', 255)
    return ok()


def deploy(name: str, options: dict[str, list[str]], state: State) -> Answer:
    """`aws cloudformation deploy` (awscli/customizations/cloudformation/deploy.py, deployer.py):
    a change set, executed and waited for; nothing to change is no error with
    --no-fail-on-empty-changeset."""
    template = one(options, "template-file")
    if not os.path.isfile(template):
        return error(f"\nInvalid template path {template}", 255)
    text = read(template)
    params = dict(p.split("=", 1) for p in options.get("parameter-overrides", []))
    stack = state["stacks"].get(name)
    waiting = "\nWaiting for changeset to be created..\n"
    if stack is not None and stack["status"] == "ROLLBACK_COMPLETE":
        return aws_error("ValidationError", "create-change-set",
                         f"Stack:arn:aws:cloudformation:us-west-2:{ACCOUNT}:stack/{name}/"
                         f"0a1b2c3d is in ROLLBACK_COMPLETE state and can not be updated.")
    imports = sorted(set(re.findall(r"Fn::ImportValue: (\S+)", text)))
    absent = [export for export in imports if export not in stack_exports(state)]
    if absent:
        return error("\nFailed to create the changeset: Waiter ChangeSetCreateComplete failed: "
                     "Waiter encountered a terminal failure state: For expression \"Status\" "
                     "we matched expected path: \"FAILED\" Status: FAILED. Reason: No export "
                     f"named {absent[0]} found", 255, waiting)
    digest = sha256(text)
    if stack is not None and stack["params"] == params and stack["template"] == digest:
        return ok(f"{waiting}\nNo changes to deploy. Stack {name} is up to date\n")
    executing = waiting + "Waiting for stack create/update to complete\n"
    given = params.get("FileSystemId")
    failure = (failing("cloudformation-deploy") and "Resource handler returned message: "
               "\"Resource of type 'AWS::EFS::MountTarget' with identifier 'MountTarget1' did "
               "not stabilize.\"")
    if given and given not in state["file_systems"]:
        failure = f"File system '{given}' does not exist."
    if failure:
        status = "ROLLBACK_COMPLETE" if stack is None else "UPDATE_ROLLBACK_COMPLETE"
        events = [["MountTarget1", failure],
                  [name, "The following resource(s) failed to create: [MountTarget1]. "
                         "Rollback requested by user."]]
        state["stacks"][name] = {**(stack or {"params": {}, "template": "", "outputs": {},
                                              "exports": [], "imports": imports, "fs": ""}),
                                 "status": status, "events": events}
        # deployer.py: DeployFailedError
        return error("\nFailed to create/update the stack. Run the following command\nto fetch "
                     "the list of events leading up to the failure\naws cloudformation "
                     f"describe-stack-events --stack-name {name}", 255, executing)
    owned = (stack or {}).get("fs", "") if not given else ""
    if "FileSystem:" in text and not given and not owned:
        owned = made_file_system()
        state["file_systems"][owned] = {"owner": name, "mount_targets": []}
    file_system = given or owned
    if file_system:
        targets = re.findall(r"^  (MountTarget\d*):", text, re.M) or ["MountTarget"]
        lifecycle = "creating" if never_ready("mounts") else "available"
        state["file_systems"][file_system]["mount_targets"] = [
            [f"fsmt-{next_id(state, t)[:17]}", lifecycle, name] for t in targets]
    outputs = {"FileSystemId": file_system,
               "DnsName": f"{file_system}.efs.us-west-2.amazonaws.com"} if file_system else {}
    state["stacks"][name] = {"status": "CREATE_COMPLETE" if stack is None else "UPDATE_COMPLETE",
                             "params": params, "template": digest, "outputs": outputs,
                             "exports": [], "imports": imports, "events": [],
                             "fs": owned}
    return ok(f"{executing}Successfully created/updated stack - {name}\n")


def delete_stack(state: State, name: str) -> None:
    """Delete a stack: one whose exports another stack imports fails (DELETE_FAILED); the file
    system it made stays (DeletionPolicy Retain), its mount targets go."""
    stack = state["stacks"][name]
    users = importers(state, name)
    if users:
        stack["status"] = "DELETE_FAILED"
        stack["events"] = [[name, f"Export {stack['exports'][0]} cannot be deleted as it is in "
                                  f"use by {users[0]}"]]
        return
    for fs in state["file_systems"].values():
        fs["mount_targets"] = [t for t in fs["mount_targets"] if t[2] != name]
    del state["stacks"][name]


def efs(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    file_system = one(options, "file-system-id")
    entry = state["file_systems"].get(file_system)
    if entry is None:
        return aws_error("FileSystemNotFound", operation,
                         f"File system '{file_system}' does not exist.")
    query = one(options, "query")
    if operation == "describe-mount-targets":
        if query == "MountTargets[?LifeCycleState!='available'].MountTargetId":
            return ok("\t".join(t[0] for t in entry["mount_targets"] if t[1] != "available")
                      + "\n")
        if one(options, "output") == "table":
            rows = "".join(f"||  {t[0]}  |  {t[1]}  ||\n" for t in entry["mount_targets"])
            return ok(f"-----------------------\n|DescribeMountTargets|\n+--------+\n{rows}")
    if operation == "describe-file-systems":
        if query == "FileSystems[0].Tags[?Key=='paddlegen.io/stack'].Value":
            return ok(f"{entry['owner']}\n")
        if query == "FileSystems[0].SizeInBytes.Value":
            return ok("6144\n")
    if operation == "delete-file-system":
        if entry["mount_targets"]:
            return aws_error("FileSystemInUse", operation,
                             f"File system '{file_system}' has mount targets created in it.")
        del state["file_systems"][file_system]
        return ok()
    return None


def sts(operation: str, options: dict[str, list[str]], state: State) -> Answer | None:
    """Who the profile is (STS GetCallerIdentity), as the AWS CLI prints it."""
    if operation != "get-caller-identity":
        return None
    return ok(json.dumps({"UserId": "AROA0EXAMPLE:dev", "Account": "123456789012",
                          "Arn": "arn:aws:sts::123456789012:assumed-role/eksctl/dev"}) + "\n")


AWS_SERVICES: dict[str, Callable[[str, dict[str, list[str]], State], Answer | None]] = {
    "iam": iam, "ecr": ecr, "eks": eks, "logs": logs, "cloudformation": cloudformation,
    "efs": efs, "sts": sts}


def legacy_aws(argv: list[str], state: State) -> Answer:
    """The older profiles' calls, answered without state (kube-aws, kube-up)."""
    words = [w for i, w in enumerate(argv) if not w.startswith("-")
             and (i == 0 or not argv[i - 1].startswith("--"))]
    service, operation = [*words, "", ""][:2]
    query = option(argv, "--query") or ""
    if service == "ec2":
        answer = ec2(operation, aws_options(argv[2:]), state)
        if answer is not None:
            return answer
    absent = {("ec2", "describe-key-pairs"), ("s3api", "head-bucket")}
    if (service, operation) in absent or (service, operation, query) == ("kms", "describe-key",
                                                                         ""):
        return error("\nAn error occurred (NotFound)", 254)
    answers = {
        ("ec2", "create-key-pair"): "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n"
                                    "-----END RSA PRIVATE KEY-----",
        ("kms", "create-key"): "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        ("ec2", "describe-vpcs"): "vpc-0a1b2c3d",
        ("ec2", "describe-subnets"): "subnet-0a1b2c3d",
        ("ec2", "describe-security-groups"): "sg-0a1b2c3d",
        ("ec2", "describe-instances"): "54.1.2.3\t54.1.2.4",
        ("elb", "describe-load-balancers"): "",
        ("s3", "ls"): "",
        ("s3api", "list-objects-v2"): "None",  # --output text of a prefix with no key
    }
    quiet = {"kms": {"create-alias", "schedule-key-deletion", "delete-alias"},
             "ec2": {"delete-key-pair"}, "s3": {"mb", "rm", "rb"}}
    if (service, operation) == ("kms", "describe-key"):
        arn = os.environ["STUB_KMS_ARN"]
        return ok((arn if "Arn" in query else arn.rsplit("/", 1)[1]) + "\n")
    if (service, operation) in answers:
        return ok(answers[service, operation] + "\n")
    if operation in quiet.get(service, set()):
        return ok()
    return unknown("aws", argv)


# --- eksctl ---------------------------------------------------------------------------------

def read_yaml(path: str) -> list[Obj]:
    """The documents of a YAML file."""
    return read_yaml_text(read(path))


def read_yaml_text(text: str) -> list[Obj]:
    """The documents of a YAML text (PyYAML, imported only here: it is slow to import)."""
    import site

    site.main()  # the stand-in runs with -S: its interpreter's site-packages only now
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc]


def eksctl(argv: list[str], state: State) -> Answer:
    profile = os.environ.get("AWS_PROFILE", "")
    if not profile_known(state, profile):
        return error(f"Error: checking AWS STS access - cannot get role ARN for current session:"
                     f" failed to get shared config profile, {profile}")
    if argv[:3] == ["utils", "write-kubeconfig", "--cluster"]:
        name = argv[3]
        if name not in state["clusters"]:
            return error(eksctl_not_found(name))
        path = option(argv, "--kubeconfig") or os.environ.get("KUBECONFIG", "")
        write(path, kubeconfig(name))
        return ok(f'[✔]  saved kubeconfig as "{path}"\n')
    config_path = option(argv, "-f")
    if config_path is None or not os.path.isfile(config_path):
        return error(f"Error: reading config file {config_path!r}: no such file", 1)
    [config] = read_yaml(config_path)
    name = config["metadata"]["name"]
    groups = {g["name"]: g.get("desiredCapacity", 2) for g in config.get("managedNodeGroups", [])}
    if argv[:2] == ["create", "cluster"]:
        return create_cluster(state, name, groups, option(argv, "--kubeconfig"))
    if argv[:2] == ["create", "nodegroup"]:
        return create_nodegroups(state, name, groups)
    if argv[:2] == ["delete", "cluster"]:
        return delete_cluster(state, name)
    return unknown("eksctl", argv)


def eksctl_not_found(name: str) -> str:
    # eksctl-io/eksctl#4662: eksctl delete cluster of a cluster that is not there
    return (f"Error: unable to describe cluster control plane: operation error EKS: "
            f"DescribeCluster, https response error StatusCode: 404, RequestID: 21b14c5a, "
            f"ResourceNotFoundException: No cluster found for name: {name}.")


def kubeconfig(name: str) -> str:
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: paddlegen@{name}.us-west-2."
            "eksctl.io\n")


def cluster_stack(name: str, status: str, events: list[list[str]]) -> Obj:
    exports = [f"eksctl-{name}-cluster::{key}" for key in
               ("VPC", "SubnetsPrivate", "SubnetsPublic", "ClusterSecurityGroupId",
                "SecurityGroup", "SharedNodeSecurityGroup")]
    return {"status": status, "params": {}, "template": "", "outputs": {}, "events": events,
            "exports": exports if status == "CREATE_COMPLETE" else [], "imports": [], "fs": ""}


def create_cluster(state: State, name: str, groups: dict[str, int],
                   kubeconfig_path: str | None) -> Answer:
    stack = f"eksctl-{name}-cluster"
    if stack in state["stacks"]:  # eksctl-io/eksctl#7718
        return error(f'Error: creating CloudFormation stack "{stack}": operation error '
                     "CloudFormation: CreateStack, https response error StatusCode: 400, "
                     f"RequestID: 2966a9ad, AlreadyExistsException: Stack [{stack}] already "
                     "exists")
    if failing("eksctl-create-cluster"):
        state["stacks"][stack] = cluster_stack(name, "ROLLBACK_COMPLETE", [
            ["ControlPlane", "Resource handler returned message: \"Cannot create cluster "
                             f"'{name}' because us-west-2b, the targeted availability zone, does "
                             "not currently have sufficient capacity to support the cluster."]])
        return error("[!]  1 error(s) occurred and cluster hasn't been created properly, you may "
                     "wish to check CloudFormation console\n"
                     f'Error: failed to create cluster "{name}"')
    state["stacks"][stack] = cluster_stack(name, "CREATE_COMPLETE", [])
    state["clusters"][name] = {"nodegroups": {}}
    state["api"] = True
    state["log_groups"].append(f"/aws/eks/{name}/cluster")
    answer = create_nodegroups(state, name, groups)
    if kubeconfig_path:
        write(kubeconfig_path, kubeconfig(name))
    return ok(f'[✔]  EKS cluster "{name}" in "us-west-2" region is ready\n{answer.out!s}')


def create_nodegroups(state: State, name: str, groups: dict[str, int]) -> Answer:
    cluster = state["clusters"].get(name)
    if cluster is None:
        return error(eksctl_not_found(name))
    existing = [g for g in groups if g in cluster["nodegroups"]]
    for group, size in groups.items():
        if group not in existing:
            state["stacks"][f"eksctl-{name}-nodegroup-{group}"] = {
                **cluster_stack(name, "CREATE_COMPLETE", []), "exports": []}
            cluster["nodegroups"][group] = size
    state["nodes"] = sum(cluster["nodegroups"].values())
    said = (f"[\u2139]  {len(existing)} existing nodegroup(s) ({','.join(existing)}) will be "
            "excluded\n" if existing else "")
    return ok(said + f"[✔]  created {len(groups) - len(existing)} managed nodegroup(s) in cluster "
                     f'"{name}"\n')


def delete_cluster(state: State, name: str) -> Answer:
    if name not in state["clusters"]:
        return error(eksctl_not_found(name))
    cluster = state["clusters"][name]
    for group in list(cluster["nodegroups"]):
        stack = f"eksctl-{name}-nodegroup-{group}"
        if failing("eksctl-delete-cluster"):
            state["stacks"][stack]["status"] = "DELETE_FAILED"
            state["stacks"][stack]["events"] = [
                ["NodeGroup", "Resource handler returned message: \"Ec2SecurityGroupDeletion"
                              "Failure: sg-0a1b2c3d has a dependent object\""]]
            return error(f'[✖]  waiter state transitioned to Failure\nError: failed to delete '
                         f'cluster with nodegroup(s): deleting stack "{stack}": DELETE_FAILED')
        state["stacks"].pop(stack, None)
        del cluster["nodegroups"][group]
    stack = f"eksctl-{name}-cluster"
    users = importers(state, stack)
    if failing("eksctl-delete-cluster-stack"):
        # the control plane goes first; the VPC then fails to go (a dependency left in it)
        del state["clusters"][name]
        state["api"], state["objects"], state["nodes"] = False, {}, 0
        state["stacks"][stack].update(status="DELETE_FAILED", events=[
            ["VPC", "The vpc 'vpc-0a1b2c3d' has dependencies and cannot be deleted."]])
        return error(f'[✖]  waiter state transitioned to Failure\nError: deleting stack '
                     f'"{stack}": DELETE_FAILED')
    if users:
        delete_stack(state, stack)
        return error(f'[✖]  waiter state transitioned to Failure\nError: deleting stack '
                     f'"{stack}": Export {stack}::VPC cannot be deleted as it is in use by '
                     f"{users[0]}")
    state["stacks"].pop(stack, None)
    del state["clusters"][name]
    state["api"], state["objects"], state["nodes"] = False, {}, 0
    return ok('[✔]  all cluster resources were deleted\n')


# --- Kubernetes -----------------------------------------------------------------------------

# kind: its resource (plural), API group, whether namespaced, and the short names kubectl knows
KINDS: dict[str, tuple[str, str, bool, tuple[str, ...]]] = {
    "Namespace": ("namespaces", "", False, ("ns",)),
    "Pod": ("pods", "", True, ("po",)),
    "Service": ("services", "", True, ("svc",)),
    "ConfigMap": ("configmaps", "", True, ("cm",)),
    "PersistentVolume": ("persistentvolumes", "", False, ("pv",)),
    "PersistentVolumeClaim": ("persistentvolumeclaims", "", True, ("pvc",)),
    "Node": ("nodes", "", False, ("no",)),
    "Event": ("events", "", True, ("ev",)),
    "ServiceAccount": ("serviceaccounts", "", True, ("sa",)),
    "Secret": ("secrets", "", True, ()),
    "Role": ("roles", "rbac.authorization.k8s.io", True, ()),
    "RoleBinding": ("rolebindings", "rbac.authorization.k8s.io", True, ()),
    "ClusterRole": ("clusterroles", "rbac.authorization.k8s.io", False, ()),
    "ClusterRoleBinding": ("clusterrolebindings", "rbac.authorization.k8s.io", False, ()),
    "StorageClass": ("storageclasses", "storage.k8s.io", False, ("sc",)),
    "PriorityClass": ("priorityclasses", "scheduling.k8s.io", False, ("pc",)),
    "DaemonSet": ("daemonsets", "apps", True, ("ds",)),
    "StatefulSet": ("statefulsets", "apps", True, ("sts",)),
    "Job": ("jobs", "batch", True, ()),
    "Deployment": ("deployments", "apps", True, ("deploy",)),
    "NetworkPolicy": ("networkpolicies", "networking.k8s.io", True, ("netpol",)),
    "PodDisruptionBudget": ("poddisruptionbudgets", "policy", True, ("pdb",)),
    "CustomResourceDefinition": ("customresourcedefinitions", "apiextensions.k8s.io", False,
                                 ("crd", "crds")),
    "PaddleJob": ("paddlejobs", "kubeflow.org", True, ()),
    "JobSet": ("jobsets", "jobset.x-k8s.io", True, ()),
    "TrainJob": ("trainjobs", "trainer.kubeflow.org", True, ()),
    "TrainingRuntime": ("trainingruntimes", "trainer.kubeflow.org", True, ()),
    "ResourceFlavor": ("resourceflavors", "kueue.x-k8s.io", False, ()),
    "ClusterQueue": ("clusterqueues", "kueue.x-k8s.io", False, ()),
    "LocalQueue": ("localqueues", "kueue.x-k8s.io", True, ()),
    "Workload": ("workloads", "kueue.x-k8s.io", True, ()),
}
# A kind of a CRD: the CRD that must be installed before an object of it.
CRD_OF = {kind: f"{plural}.{group}" for kind, (plural, group, _, _) in KINDS.items()
          if group in ("kubeflow.org", "jobset.x-k8s.io", "trainer.kubeflow.org",
                       "kueue.x-k8s.io")}
# The release manifests the runbooks install, by a fragment of their URL: the CRDs they make,
# and their controllers (namespace, Deployment). JobSet v0.12.0 and Kueue v0.19.2 release
# manifests, Kubeflow Trainer v2.3.0's manifests/overlays/manager (which brings JobSet), the
# training operator v1.9.4's manifests/overlays/standalone.
RELEASES: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "kueue": (["localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io",
               "resourceflavors.kueue.x-k8s.io", "workloads.kueue.x-k8s.io"],
              [("kueue-system", "kueue-controller-manager")]),
    "jobset": (["jobsets.jobset.x-k8s.io"], [("jobset-system", "jobset-controller-manager")]),
    "trainer": (["trainjobs.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org",
                 "clustertrainingruntimes.trainer.kubeflow.org", "jobsets.jobset.x-k8s.io"],
                [("kubeflow-system", "jobset-controller-manager"),
                 ("kubeflow-system", "kubeflow-trainer-controller-manager")]),
    "operator": (["paddlejobs.kubeflow.org", "pytorchjobs.kubeflow.org"],
                 [("kubeflow", "training-operator")]),
}
RELEASE_URLS = {"kubernetes-sigs/kueue/": "kueue", "kubernetes-sigs/jobset/": "jobset",
                "trainer.git/manifests/overlays/manager": "trainer",
                "trainer.git/manifests/overlays/standalone": "operator"}
RUN_KINDS = ("Job", "PaddleJob", "JobSet", "TrainJob")
# The kinds of a run's top-level object: the conditions (status True) of one that is done, and
# the reason and message of its Failed condition (Kubernetes' Job controller, the training
# operator v1.9.4, JobSet v0.12.0; Trainer v2.3.0 copies JobSet's).
RUNS = {"job": ("Complete", "BackoffLimitExceeded: Job has reached the specified backoff limit"),
        "paddlejob": ("Created Succeeded",
                      "PaddleJobFailed: PaddleJob linear is failed because 1 Worker replica(s) "
                      "failed."),
        "jobset": ("Completed", "ReachedMaxRestarts: jobset failed due to reaching max number "
                                "of restarts"),
        "trainjob": ("Complete", "ReachedMaxRestarts: jobset failed due to reaching max number "
                                 "of restarts")}
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"


def kind_of(resource: str) -> str | None:
    """The kind kubectl resolves a resource name to (singular, plural, short, or qualified)."""
    name = resource.lower()
    for kind, (plural, group, _, short) in KINDS.items():
        names = {kind.lower(), plural, *short}
        if name in names or (group and name in {f"{n}.{group}" for n in names}):
            return kind
    return None


def resource_name(kind: str) -> str:
    """How kubectl names the resource in an error: jobs.batch, pods."""
    plural, group, _, _ = KINDS[kind]
    return f"{plural}.{group}" if group else plural


def shown(obj: Obj) -> str:
    """How kubectl names an object it acted on: job.batch/linear, pod/x."""
    _, group, _, _ = KINDS[obj["kind"]]
    return f"{obj['kind'].lower()}{'.' + group if group else ''}/{obj['name']}"


def key_of(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace if KINDS[kind][2] else ''}/{name}"


def new_object(kind: str, namespace: str, name: str, labels: dict[str, str]) -> Obj:
    return {"kind": kind, "namespace": namespace if KINDS[kind][2] else "", "name": name,
            "labels": dict(labels), "conditions": [], "polls": 0}


def put(state: State, obj: Obj) -> Obj:
    state["objects"][key_of(obj["kind"], obj["namespace"], obj["name"])] = obj
    return obj


def get(state: State, kind: str, namespace: str, name: str) -> Obj | None:
    found: Obj | None = state["objects"].get(key_of(kind, namespace, name))
    return found


def objects_of(state: State, kind: str, namespace: str) -> list[Obj]:
    return [o for o in state["objects"].values() if o["kind"] == kind
            and (o["namespace"] == namespace or not KINDS[kind][2])]


def not_found(kind: str, name: str, creating: str | None = None) -> Answer:
    where = f'error when creating "{creating}": ' if creating else ""
    return error(f'Error from server (NotFound): {where}{resource_name(kind)} "{name}" not found')


def api_reachable(state: State) -> bool:
    """Whether kubectl reaches the cluster's API: the state says it is up (always, where the
    state does not say: the older profiles), and the kubeconfig KUBECONFIG names is there (as
    eksctl writes it). kubectl without a kubeconfig tries localhost:8080 (UNREACHABLE)."""
    if not state.get("api", True):
        return False
    config = os.environ.get("KUBECONFIG", "")
    return not config or os.path.isfile(config) or "api" not in state


UNREACHABLE = "The connection to the server localhost:8080 was refused - did you specify the " \
              "right host or port?"


def kubectl(argv: list[str], state: State) -> Answer:
    namespace = option(argv, "--namespace") or "default"
    words = [w for w in argv if not w.startswith("--namespace")]
    verb = words[0] if words else ""
    if verb == "version":
        client = "Client Version: v1.37.0\nKustomize Version: v5.7.1\n"
        if not api_reachable(state):
            return error(UNREACHABLE, 1, client)
        return ok(client + "Server Version: v1.37.0\n")
    if not api_reachable(state):
        return error(UNREACHABLE)
    handler = KUBECTL_VERBS.get(verb)
    if handler is None:
        return unknown("kubectl", argv)
    return handler(words[1:], namespace, state) or unknown("kubectl", argv)


def positionals(words: list[str]) -> list[str]:
    """The words that are not options nor option values (flags take none)."""
    valued = {"-f", "-k", "-o", "-l", "-c", "--timeout", "--sort-by", "--field-manager"}
    found, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in valued:
            skip = True
        elif not word.startswith("-"):
            found.append(word)
    return found


def manifest_documents(source: str) -> tuple[str, list[Obj]] | Answer:
    """The documents `-f SOURCE` reads (a file, a directory's files in name order, or stdin),
    each with the file it came from; an error as kubectl gives it."""
    if source == "-":
        return "STDIN", read_yaml_text(sys.stdin.read())
    if os.path.isdir(source):
        files = [os.path.join(source, f) for f in sorted(os.listdir(source))
                 if f.endswith((".yaml", ".yml", ".json"))]
        return source, [{**doc, "_file": f} for f in files for doc in read_yaml(f)]
    if not os.path.isfile(source):
        return error(f'error: the path "{source}" does not exist')
    return source, read_yaml(source)


def admissible(state: State, doc: Obj, source: str, namespace: str) -> Answer | None:
    """Why the API server would refuse the object: a kind whose CRD is not installed, a
    namespace that does not exist."""
    kind = doc["kind"]
    meta = doc.get("metadata", {})
    if kind not in KINDS:
        return error(f"stub: the kind {kind} is unknown to the stand-in: add it to KINDS", 99)
    if kind in CRD_OF and not get(state, "CustomResourceDefinition", "", CRD_OF[kind]):
        return error(f'error: resource mapping not found for name: "{meta.get("name")}" '
                     f'namespace: "{meta.get("namespace", "")}" from "{source}": no matches for '
                     f'kind "{kind}" in version "{doc.get("apiVersion")}"\nensure CRDs are '
                     "installed first")
    ns = meta.get("namespace", namespace)
    if KINDS[kind][2] and not namespace_exists(state, ns):
        return not_found("Namespace", ns, source)
    return None


def namespace_exists(state: State, namespace: str) -> bool:
    return namespace in ("default", "kube-system", "kube-public") or \
        get(state, "Namespace", "", namespace) is not None


def from_document(doc: Obj, namespace: str) -> Obj:
    meta = doc.get("metadata", {})
    obj = new_object(doc["kind"], meta.get("namespace", namespace), meta["name"],
                     meta.get("labels", {}))
    obj["spec"] = doc.get("spec", {})
    obj["digest"] = sha256(json.dumps(doc, sort_keys=True, default=str))
    return obj


def create(words: list[str], namespace: str, state: State) -> Answer | None:
    source = option(words, "-f")
    if source is None:
        return None
    read = manifest_documents(source)
    if isinstance(read, Answer):
        return read
    name, docs = read
    if option(words, "--dry-run") == "server":
        return dry_run(docs, namespace, state)
    out, errors = [], []
    for doc in docs:
        refused = admissible(state, doc, doc.get("_file", name), namespace)
        if refused:
            return refused
        obj = from_document(doc, namespace)
        if get(state, obj["kind"], obj["namespace"], obj["name"]):
            # as quoted in keptn/keptn#158 and CNA-Tech/PKS-Ninja#719; exit 1
            errors.append(f'Error from server (AlreadyExists): error when creating '
                          f'"{doc.get("_file", name)}": {resource_name(obj["kind"])} '
                          f'"{obj["name"]}" already exists')
            continue
        made(state, obj)
        out.append(f"{shown(obj)} created")
    text = "".join(line + "\n" for line in out)
    return error("\n".join(errors), 1, text) if errors else ok(text)


def dry_run(docs: list[Obj], namespace: str, state: State) -> Answer:
    """A server-side dry run: admitted (nothing made) once the kinds' CRDs and webhooks are
    there; refused, as a webhook with no endpoint refuses, under STUB_NEVER_READY webhooks."""
    for doc in docs:
        refused = admissible(state, doc, "STDIN", namespace)
        if refused:
            return refused
        if never_ready("webhooks"):
            return error('Error from server (InternalError): error when creating "STDIN": '
                         f'Internal error occurred: failed calling webhook "m{doc["kind"].lower()}'
                         '.kb.io": failed to call webhook: Post "https://webhook-service.svc:443'
                         '/mutate?timeout=10s": no endpoints available for service '
                         '"webhook-service"')
    return ok("".join(f"{shown(from_document(d, namespace))}\n" for d in docs))


def apply(words: list[str], namespace: str, state: State) -> Answer | None:
    source, kustomization = option(words, "-f"), option(words, "-k")
    release = next((name for fragment, name in RELEASE_URLS.items()
                    if fragment in (source or kustomization or "")), None)
    if release is not None:
        return install(state, release)
    if source is None:
        return None
    read = manifest_documents(source)
    if isinstance(read, Answer):
        return read
    name, docs = read
    verb = "serverside-applied" if "--server-side" in words else None
    out = []
    for doc in docs:
        refused = admissible(state, doc, doc.get("_file", name), namespace)
        if refused:
            return refused
        obj = from_document(doc, namespace)
        before = get(state, obj["kind"], obj["namespace"], obj["name"])
        if before is None:
            made(state, obj)
            out.append(f"{shown(obj)} {verb or 'created'}")
        else:
            changed = before.get("digest") != obj["digest"]
            before.update({k: obj[k] for k in ("spec", "labels", "digest")})
            out.append(f"{shown(obj)} {verb or ('configured' if changed else 'unchanged')}")
    return ok("".join(line + "\n" for line in out))


def install(state: State, release: str) -> Answer:
    """A release's manifests applied (server-side): its CRDs, namespace and controllers."""
    crds, deployments = RELEASES[release]
    out = []
    for crd in crds:
        put(state, new_object("CustomResourceDefinition", "", crd, {}))
        out.append(f"customresourcedefinition.apiextensions.k8s.io/{crd} serverside-applied")
    for ns, deployment in deployments:
        put(state, new_object("Namespace", "", ns, {}))
        put(state, new_object("Deployment", ns, deployment, {}))
        out.append(f"deployment.apps/{deployment} serverside-applied")
    return ok("".join(line + "\n" for line in out))


def made(state: State, obj: Obj) -> None:
    """An object made: a run's controller makes its pods (and Kueue a Workload); a pod of
    the runbook's own starts."""
    obj["uid"] = "0c1d2e3f-4a5b-6c7d-8e9f-" + next_id(state, obj["name"])[:12]
    put(state, obj)
    if obj["kind"] == "Pod":
        containers = obj["spec"].get("containers", [{}])
        helper = containers[0].get("command", [""])[0] == "sleep"  # waits for kubectl exec
        obj["phase"] = ("Pending" if never_ready("pods") else
                        "Running" if helper else "Succeeded")
    elif obj["kind"] in RUN_KINDS:
        start_run(state, obj)


def start_run(state: State, run: Obj) -> None:
    queue = run["labels"].get(QUEUE_LABEL)
    if queue:
        workload = new_object("Workload", run["namespace"],
                              f"{run['kind'].lower()}-{run['name']}-{run['uid'][-5:]}",
                              {JOB_UID_LABEL: run["uid"]})
        workload["owner"] = key_of(run["kind"], run["namespace"], run["name"])
        put(state, workload)
        if not get(state, "LocalQueue", run["namespace"], queue):
            return  # Kueue admits nothing from a queue that is not there: no pods
    if os.environ.get("STUB_PODS") == "" or never_ready_alone("admission"):
        return
    if run["kind"] == "TrainJob":
        runtime = get(state, "TrainingRuntime", run["namespace"],
                      run["spec"]["runtimeRef"]["name"])
        jobset = new_object("JobSet", run["namespace"], run["name"],
                            {**run["labels"], "trainer.kubeflow.org/trainjob-name": run["name"]})
        jobset.update(owner=key_of("TrainJob", run["namespace"], run["name"]), restarts=0,
                      uid=run["uid"], spec=runtime["spec"]["template"]["spec"] if runtime
                      else {"replicatedJobs": []})
        nodes = run["spec"].get("trainer", {}).get("numNodes")
        put(state, jobset)
        make_pods(state, jobset, nodes)
    else:
        run["restarts"] = 0
        make_pods(state, run, None)


def make_pods(state: State, run: Obj, nodes: int | None) -> None:
    """The pods a run's controller makes, with the labels each controller gives them: the Job
    controller's job-name and completion index, JobSet's (jsonset-name, restart-attempt),
    the training operator's replica type and index."""
    owner = key_of(run["kind"], run["namespace"], run["name"])
    attempt = os.environ.get("STUB_RESTARTS") or str(run.get("restarts", 0))
    spec = run["spec"]
    made_pods: list[tuple[str, dict[str, str]]] = []
    if run["kind"] == "Job":
        made_pods = job_pods(run["name"], spec, {})
    elif run["kind"] == "PaddleJob":
        for replica, replica_spec in spec.get("paddleReplicaSpecs", {}).items():
            labels = replica_spec["template"].get("metadata", {}).get("labels", {})
            for i in range(replica_spec.get("replicas", 1)):
                made_pods.append((f"{run['name']}-{replica.lower()}-{i}", {
                    **labels, "training.kubeflow.org/job-name": run["name"],
                    "training.kubeflow.org/replica-type": replica.lower(),
                    "training.kubeflow.org/replica-index": str(i)}))
    elif run["kind"] == "JobSet":
        for replicated in spec.get("replicatedJobs", []):
            job_spec = dict(replicated["template"]["spec"])
            if nodes is not None and replicated["name"] == "node":
                job_spec.update(parallelism=nodes, completions=nodes)
            for j in range(replicated.get("replicas", 1)):
                made_pods += job_pods(f"{run['name']}-{replicated['name']}-{j}", job_spec, {
                    "jobset.sigs.k8s.io/jobset-name": run["name"],
                    "jobset.sigs.k8s.io/replicatedjob-name": replicated["name"],
                    "jobset.sigs.k8s.io/job-index": str(j),
                    "jobset.sigs.k8s.io/restart-attempt": attempt})
    for name, labels in made_pods:
        pod = new_object("Pod", run["namespace"], name, labels)
        pod.update(owner=owner, phase="Pending" if never_ready("pods") else "Running")
        put(state, pod)


def job_pods(job: str, spec: Obj, extra: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    """A Job's pods (pkg/controller/job: job-name and batch.kubernetes.io/job-name; an Indexed
    Job's completion index in the name and the label)."""
    labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    indexed = spec.get("completionMode") == "Indexed"
    pods = []
    for i in range(spec.get("parallelism", 1)):
        suffix = sha256(f"{job}/{i}")[:5]
        name = f"{job}-{i}-{suffix}" if indexed else f"{job}-{suffix}"
        pod_labels = {**labels, **extra, "job-name": job, "batch.kubernetes.io/job-name": job}
        if indexed:
            pod_labels["batch.kubernetes.io/job-completion-index"] = str(i)
        pods.append((name, pod_labels))
    return pods


def owned_by(state: State, key: str) -> list[Obj]:
    """What the object of `key` owns, and what that owns."""
    direct = [o for o in state["objects"].values() if o.get("owner") == key]
    return direct + [deep for o in direct
                     for deep in owned_by(state, key_of(o["kind"], o["namespace"], o["name"]))]


def remove(state: State, obj: Obj) -> None:
    """Delete an object with what it owns (a namespace: all in it); its pods go at once, or
    never under STUB_NEVER_READY deletions (they stay Terminating)."""
    key = key_of(obj["kind"], obj["namespace"], obj["name"])
    doomed = owned_by(state, key)
    if obj["kind"] == "Namespace":
        doomed += [o for o in state["objects"].values() if o["namespace"] == obj["name"]]
    for item in [obj, *doomed]:
        item_key = key_of(item["kind"], item["namespace"], item["name"])
        if item["kind"] == "Pod" and never_ready("deletions"):
            item["terminating"] = True
        else:
            state["objects"].pop(item_key, None)


def delete(words: list[str], namespace: str, state: State) -> Answer | None:
    ignore = "--ignore-not-found" in words
    source, kustomization = option(words, "-f"), option(words, "-k")
    if kustomization is not None:
        release = next(n for f, n in RELEASE_URLS.items() if f in kustomization)
        crds, deployments = RELEASES[release]
        for crd in crds:
            state["objects"].pop(key_of("CustomResourceDefinition", "", crd), None)
        for ns, deployment in deployments:
            state["objects"].pop(key_of("Deployment", ns, deployment), None)
        return ok()
    targets: list[tuple[str, str, str]] = []
    if source is not None:
        read = manifest_documents(source)
        if isinstance(read, Answer):
            return read
        for doc in read[1]:
            meta = doc.get("metadata", {})
            targets.append((doc["kind"], meta.get("namespace", namespace), meta["name"]))
    else:
        resource, *names = positionals(words)
        kind = kind_of(resource)
        if kind is None:
            return None
        targets = [(kind, namespace, name) for name in names]
    out, errors = [], []
    for kind, ns, name in targets:
        obj = get(state, kind, ns, name)
        if obj is None:
            if not ignore:
                errors.append(f'Error from server (NotFound): {resource_name(kind)} "{name}" '
                              "not found")
            continue
        remove(state, obj)
        kind_shown, _, _ = shown(obj).partition("/")
        out.append(f'{kind_shown} "{name}" deleted')
    text = "".join(line + "\n" for line in out)
    return error("\n".join(errors), 1, text) if errors else ok(text)


def selected(state: State, namespace: str, selector: str | None) -> list[Obj]:
    """The pods of the namespace whose labels hold every key=value of the selector."""
    wanted = dict(pair.split("=", 1) for pair in selector.split(",")) if selector else {}
    return sorted((p for p in objects_of(state, "Pod", namespace)
                   if all(p["labels"].get(k) == v for k, v in wanted.items())),
                  key=lambda p: p["name"])


CONDITIONS = '{.status.conditions[?(@.status=="True")].type}'
FAILED_WHY = ('{.status.conditions[?(@.type=="Failed")].reason}: '
              '{.status.conditions[?(@.type=="Failed")].message}')


def get_command(words: list[str], namespace: str, state: State) -> Answer | None:
    output = option(words, "-o") or ""
    selector = option(words, "-l")
    resource, *names = positionals(words)
    if resource == "svc" and "--all-namespaces" in words:
        return ok()  # no Service of type LoadBalancer
    if "," in resource:  # each kind's listing in turn
        answers = [get_command([kind, *words[1:]], namespace, state) for kind in
                   resource.split(",")]
        if any(a is None for a in answers):
            return None
        return Answer(max(a.code for a in answers if a),
                      "".join(str(a.out) for a in answers if a),
                      "".join(a.err for a in answers if a))
    kind = kind_of(resource)
    if kind is None:
        return None
    if kind == "Event":
        return events(namespace, state)
    if kind == "Node":
        return nodes(state, output)
    if not names:
        return listing(state, kind, namespace, selector, output)
    found = [get(state, kind, namespace, name) for name in names]
    missing = [name for name, obj in zip(names, found, strict=True) if obj is None]
    if missing and "--ignore-not-found" in words:  # kubectl prints nothing for those, exit 0
        found = [obj for obj in found if obj is not None]
        if not found:
            return ok()
        missing = []
    if output == "name":
        return ok("".join(f"{KINDS[kind][0][:-1]}/{obj['name']}\n" for obj in found if obj))
    if missing:
        table = "".join(f"{n}\n" for n, o in zip(names, found, strict=True) if o)
        return error("\n".join(not_found(kind, n).err.strip() for n in missing), 1, table)
    if len(found) == 1 and output:
        obj = found[0]
        assert obj is not None
        return jsonpath(state, obj, output)
    return ok("NAME   AGE\n" + "".join(f"{name}   5m\n" for name in names))


def listing(state: State, kind: str, namespace: str, selector: str | None,
            output: str) -> Answer | None:
    if kind == "Pod":
        items = selected(state, namespace, selector)
    elif kind == "Workload":
        items = objects_of(state, "Workload", namespace)
        if selector:
            key, _, value = selector.partition("=")
            items = [w for w in items if w["labels"].get(key) == value]
    else:
        items = objects_of(state, kind, namespace)
    if output == "name":
        return ok("".join(f"{KINDS[kind][0][:-1]}/{i['name']}\n" for i in items))
    if output == "jsonpath={.items[*].metadata.name}":
        return ok(" ".join(i["name"] for i in items))
    if output == "jsonpath={.items[*].spec.active}":
        active = os.environ.get("STUB_WORKLOAD_ACTIVE", "true")
        return ok(" ".join(active for _ in items))
    if output:
        return None
    if not items:
        return error(f"No resources found in {namespace} namespace.", 0)
    if kind == "Pod":
        return ok("NAME   READY   STATUS   RESTARTS   AGE\n" + "".join(
            f"{p['name']}   0/1   {'Terminating' if p.get('terminating') else p['phase']}   0"
            "   5m\n" for p in items))
    return ok("NAME   AGE\n" + "".join(f"{i['name']}   5m\n" for i in items))


def jsonpath(state: State, obj: Obj, output: str) -> Answer | None:
    expression = output.removeprefix("jsonpath=")
    kind = obj["kind"].lower()
    if expression == CONDITIONS:
        if os.environ.get("STUB_JOB_STATE") is not None and obj["kind"] in RUN_KINDS:
            return ok(os.environ["STUB_JOB_STATE"])
        poll(state, obj)
        return ok(" ".join(c[0] for c in obj["conditions"] if c[1] == "True"))
    if expression == FAILED_WHY:
        why = next((f"{c[2]}: {c[3]}" for c in obj["conditions"] if c[0] == "Failed"), ": ")
        return ok(os.environ.get("STUB_FAILED_WHY", why if why != ": " else RUNS[kind][1]))
    if expression == "{.metadata.uid}":
        return ok(obj.get("uid", ""))
    if expression == "{.status.restarts}" and obj["kind"] == "JobSet":
        return ok(os.environ.get("STUB_RESTARTS", str(obj.get("restarts", 0))))
    if expression == "{.status.phase}" and obj["kind"] == "Pod":
        return ok(obj["phase"])
    return None


def poll(state: State, run: Obj) -> None:
    """A query of a run's conditions: the STUB_RUN_POLLS-th ends it, unless its pods never
    start or runs never end (STUB_NEVER_READY)."""
    if obj_done(run) or run["kind"] not in RUN_KINDS or run.get("owner"):
        return
    run["polls"] += 1
    if run["polls"] >= int(os.environ.get("STUB_RUN_POLLS", "1")):
        end_run(state, run)


def obj_done(run: Obj) -> bool:
    return any(c[0] in ("Failed", "Complete", "Completed", "Succeeded") for c in
               run["conditions"])


def end_run(state: State, run: Obj) -> None:
    """The run's end, as STUB_RUN_END says; the conditions each controller sets then."""
    if never_ready("runs") or never_ready("pods") or never_ready_alone("admission") or \
            obj_done(run):
        return
    if run["labels"].get(QUEUE_LABEL) and not get(state, "LocalQueue", run["namespace"],
                                                  run["labels"][QUEUE_LABEL]):
        return
    key = key_of(run["kind"], run["namespace"], run["name"])
    if os.environ.get("STUB_RUN_END") == "deleted":
        for item in [*owned_by(state, key), run]:
            state["objects"].pop(key_of(item["kind"], item["namespace"], item["name"]), None)
        return
    failed = os.environ.get("STUB_RUN_END", "succeeded") == "failed"
    kind = run["kind"].lower()
    reason, _, message = RUNS[kind][1].partition(": ")
    if failed:
        done = {"job": ["FailureTarget", "Failed"]}.get(kind, ["Failed"])
    else:
        done = {"job": ["SuccessCriteriaMet", "Complete"]}.get(kind, RUNS[kind][0].split())
    run["conditions"] = [[c, "True", reason if c == "Failed" else "", message if c == "Failed"
                          else ""] for c in done]
    for item in owned_by(state, key):
        if item["kind"] == "Pod":
            item["phase"] = "Failed" if failed else "Succeeded"
        elif item["kind"] == "JobSet":
            item["conditions"] = [[c, "True", reason, message]
                                  for c in (["Failed"] if failed else ["Completed"])]


def owner_run(state: State, pod: Obj) -> Obj | None:
    """The run a pod belongs to: its owner, or the owner's owner (a TrainJob's JobSet's)."""
    owner: Obj | None = state["objects"].get(pod.get("owner", ""))
    while owner is not None and owner.get("owner"):
        owner = state["objects"].get(owner["owner"])
    return owner


def logs_command(words: list[str], namespace: str, state: State) -> Answer | None:
    [target] = positionals([w for w in words if w != "-f"])  # here -f follows: no value
    if target.startswith("job/"):
        pods = selected(state, namespace, f"job-name={target[4:]}")
        if not pods:
            return not_found("Job", target[4:])
        target = pods[0]["name"]
    pod = get(state, "Pod", namespace, target)
    if pod is None:
        return not_found("Pod", target)
    if pod["phase"] == "Pending":
        return error(f'Error from server (BadRequest): container "{pod["name"]}" in pod '
                     f'"{pod["name"]}" is waiting to start: ContainerCreating')
    text = f"I1116 {pod['name']}: step 1, loss 0.25\nI1116 {pod['name']}: step 2, loss 0.12\n"
    if "-f" in words:
        if os.environ.get("STUB_FOLLOW") == "interrupt":
            return Answer(0, text, "", interrupt=True)
        run = owner_run(state, pod)
        if run is not None:
            end_run(state, run)
    return ok(text)


def exec_command(words: list[str], namespace: str, state: State) -> Answer | None:
    split = words.index("--")
    [target] = positionals(words[:split])
    pod = get(state, "Pod", namespace, target)
    if pod is None:
        return not_found("Pod", target)
    if pod["phase"] != "Running":
        return error(f"error: cannot exec into a container in a completed pod; current phase "
                     f"is {pod['phase']}")
    if "tar" in words[split:]:
        return ok(tar_gz({"output/pass-00000/done": b"",
                          "output/node_0/train.log": b"I1116 pass 0\n"}))
    return None


def describe(words: list[str], namespace: str, state: State) -> Answer | None:
    names = positionals(words)
    resource, *named = names[0].split("/", 1) + names[1:]
    kind = kind_of(resource)
    if kind is None:
        return None
    if not named:  # by label, or all of the kind
        found = listing(state, kind, namespace, option(words, "-l"), "name")
        named = [line.split("/", 1)[1] for line in str(found.out if found else "").split()]
    described = []
    for name in named:
        obj = get(state, kind, namespace, name)
        if obj is None:
            return not_found(kind, name)
        why = ("  Warning  FailedScheduling  5m  default-scheduler  0/2 nodes are available: 2 "
               "Insufficient nvidia.com/gpu.\n" if obj.get("phase") == "Pending" else
               "  <none>\n")
        described.append(f"Name:         {name}\nNamespace:    {obj['namespace']}\nEvents:\n{why}")
    return ok("\n".join(described))


def events(namespace: str, state: State) -> Answer:
    pending = [p for p in objects_of(state, "Pod", namespace) if p.get("phase") == "Pending"]
    if not pending:
        return error(f"No resources found in {namespace} namespace.", 0)
    return ok("LAST SEEN   TYPE      REASON             OBJECT   MESSAGE\n" + "".join(
        f"2m          Warning   FailedScheduling   pod/{p['name']}   0/2 nodes are available: "
        "2 Insufficient nvidia.com/gpu.\n" for p in pending))


def nodes(state: State, output: str) -> Answer:
    count = state.get("nodes") or (3 if "api" not in state else 0)
    if output.startswith("custom-columns="):
        return ok("NAME   GPUS   TAINTS\n" + "".join(
            f"ip-10-0-0-{i}   1   <none>\n" for i in range(count)))
    if not count:
        return error("No resources found", 0)
    return ok("NAME   STATUS   ROLES    AGE   VERSION\n" + "".join(
        f"ip-10-0-0-{i}.us-west-2.compute.internal   Ready   <none>   5m   v1.34.2\n"
        for i in range(count)))


def rollout(words: list[str], namespace: str, state: State) -> Answer | None:
    action, target = positionals(words)[:2]
    name = target.split("/", 1)[1]
    if get(state, "Deployment", namespace, name) is None:
        return not_found("Deployment", name)
    if action == "restart":
        return ok(f"deployment.apps/{name} restarted\n")
    if action != "status":
        return None
    if never_ready("rollouts"):  # kubectl rollout status past its --timeout
        return error("error: timed out waiting for the condition", 1,
                     f'Waiting for deployment "{name}" rollout to finish: 0 of 1 updated '
                     "replicas are available...\n")
    return ok(f'deployment "{name}" successfully rolled out\n')


KUBECTL_VERBS: dict[str, Callable[[list[str], str, State], Answer | None]] = {
    "get": get_command, "create": create, "apply": apply, "delete": delete,
    "logs": logs_command, "exec": exec_command, "describe": describe, "rollout": rollout}


# --- the older profiles' tools --------------------------------------------------------------

def kube_aws(argv: list[str], state: State) -> Answer:
    if argv[0] != "init" and not os.path.isfile("cluster.yaml"):
        return error("stub: cluster.yaml: no such file (run kube-aws in the assets directory)")
    if argv[0] == "status":
        if os.environ.get("STUB_KUBE_AWS") == "v0.9.9":
            return ok('WARN: the worker node pool "workers" is associated to a k8s API endpoint\n'
                      f"Cluster Name:\t\tpaddle-cluster\nController DNS Names:\t{ELB}, other.elb\n")
        return ok(f"Cluster Name:\t\tpaddle-cluster\nController DNS Name:\t{ELB}\n")
    if argv[0] == "init":
        write("cluster.yaml", "clusterName: from-init\n")
    return ok()


def kube_up(argv: list[str], state: State) -> Answer:
    if os.environ.get("KUBERNETES_PROVIDER") != "aws":
        return error("KUBERNETES_PROVIDER is not aws: aws/kube-up.env was not sourced")
    return ok()


def passthrough(argv: list[str], state: State) -> Answer:
    return ok()


def dig(argv: list[str], state: State) -> Answer:
    return ok("54.241.164.52\n54.67.102.112\n")


HANDLERS: dict[str, Callable[[list[str], State], Answer]] = {
    "aws": aws, "kubectl": kubectl, "kube-aws": kube_aws, "curl": curl,
    "kube-up.sh": kube_up, "kube-down.sh": kube_up, "eksctl": eksctl, "dig": dig,
    "ssh": passthrough, "docker": passthrough}


def main() -> int:
    tool, argv = os.path.basename(sys.argv[0]), sys.argv[1:]
    log(tool, argv)
    if tool in ("ssh", "docker") and (tool == "ssh" or "--password-stdin" in argv) \
            and not sys.stdin.isatty():
        # as the real ones do: ssh forwards its input, `docker login --password-stdin` reads it
        # (else the writer of the pipe may die of SIGPIPE, as `aws ecr get-login-password` did)
        sys.stdin.buffer.read()
    answer = with_state(lambda state: HANDLERS[tool](argv, state))
    out = answer.out.encode() if isinstance(answer.out, str) else answer.out
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.write(answer.err)
    sys.stderr.flush()
    if answer.interrupt:  # Ctrl-C: SIGINT to the foreground process group
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.killpg(os.getpgid(0), signal.SIGINT)
    return answer.code


if __name__ == "__main__":
    sys.exit(main())
