"""Runbook pieces of the AWS profiles: IAM, CloudFormation, the user's AWS CLI profile, load
balancers and NFS mounts of EFS."""

from __future__ import annotations

import textwrap
from shlex import quote as q

from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import wrapped
from paddlegen.profiles.aws.storage import EFS_MOUNT_OPTIONS

# Where the blocks of an AWS runbook look up what earlier blocks made (rb.header).
SOURCES = "AWS (or `$ASSETS`)"

# The administrator's blocks (the IAM group's set-up and removal) run under a profile named
# on purpose, never under the user's profile that every other block exports.
AS_ADMINISTRATOR = ('export AWS_PROFILE="${ADMIN_PROFILE:?set ADMIN_PROFILE to the AWS CLI '
                    'profile of an administrator of the account}"\n')
MANAGED_POLICY_PREFIX = "arn:aws:iam::aws:policy/"
# Seeds 000, 001 and 003: the AWS managed policies the IAM user needs (ARNs after the prefix).
SEED_MANAGED_POLICIES = (
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
LOAD_BALANCERS = ("LOAD_BALANCERS='{range .items[?(@.spec.type==\"LoadBalancer\")]}"
                  "{.metadata.namespace} {.metadata.name}{\"\\n\"}{end}'")


def user_profile(cluster: str) -> str:
    """The AWS CLI profile of the IAM user that runs the cluster tool: every block exports it,
    so a new terminal runs as that user with nothing to remember."""
    return f"paddlegen-{cluster}"


def as_the_user(cluster: str) -> str:
    """What the person does once, after the IAM step: give the user's profile a key."""
    profile = user_profile(cluster)
    return rb.fill(
        f"From here on every block runs as that user, through the AWS CLI profile `{profile}` "
        "that each block exports. Give that profile an access key of the user's, once:") + (
        f'\n\n- as the administrator: `aws iam create-access-key --user-name "$IAM_USER"`\n'
        f"- then `aws configure --profile {profile}`, with that key")


def deploy_efs(stack: str, overrides: list[str]) -> str:
    """Deploy (or update) the EFS stack; a deploy that changes nothing is no error, so the
    block can be run again."""
    return wrapped(["aws cloudformation deploy", f"--stack-name {q(stack)}",
                    '--template-file "$OUT/aws/efs.cfn.yaml"', "--no-fail-on-empty-changeset",
                    f"--parameter-overrides {overrides[0]}", *overrides[1:]]) + "\n"


def stack_output(stack: str, key: str) -> str:
    """The command that prints one output of a CloudFormation stack."""
    return (f"aws cloudformation describe-stacks --stack-name {q(stack)} --query "
            f"\"Stacks[0].Outputs[?OutputKey=='{key}'].OutputValue\" --output text")


def group_policy_put(group: str) -> str:
    """The inline policy of the IAM group (aws/iam-policy.json), also its name."""
    return (f"aws iam put-group-policy --group-name {q(group)} --policy-name {q(group)} \\\n"
            '  --policy-document "file://$OUT/aws/iam-policy.json"\n')


def group_policy_deleted(group: str) -> str:
    return f"aws iam delete-group-policy --group-name {q(group)} --policy-name {q(group)}\n"


def group_policies(action: str, group: str, names: tuple[str, ...]) -> str:
    """Attach (or detach) the managed policies to (or from) an IAM group, one ARN a line."""
    arns = "".join(f"  {MANAGED_POLICY_PREFIX}{name} \\\n" for name in names)
    return (f"for arn in \\\n{arns}; do\n"
            f'  aws iam {action}-group-policy --group-name {q(group)} --policy-arn "$arn"\n'
            "done\n")


def iam_group(group: str, policies: tuple[str, ...], tool: str) -> str:
    """A group of its own for the user that runs the tool, holding the managed policies (so
    they do not count against the user's quota of ten); the user is kept in $ASSETS."""
    return (f'IAM_USER="${{IAM_USER:?set IAM_USER to the IAM user that will run {tool}}}"\n'
            'echo "$IAM_USER" > "$ASSETS/iam-user"\n'
            f"aws iam get-group --group-name {q(group)} >/dev/null 2>&1 ||\n"
            f"  aws iam create-group --group-name {q(group)}\n"
            f"{group_policies('attach', group, policies)}"
            f'aws iam add-user-to-group --group-name {q(group)} --user-name "$IAM_USER"\n')


def iam_group_removed(group: str, policies: tuple[str, ...]) -> str:
    return (f"aws iam remove-user-from-group --group-name {q(group)} "
            '--user-name "$(cat "$ASSETS/iam-user")"\n'
            f"{group_policies('detach', group, policies)}"
            f"aws iam delete-group --group-name {q(group)}\n")


def delete_load_balancers(vpc_lookup: str) -> str:
    """Delete every Service of type LoadBalancer and wait until AWS has removed their ELBs
    (named a<31 hex digits> by Kubernetes): CloudFormation cannot delete a VPC they use."""
    elbs = ("aws elb describe-load-balancers --query "
            "\"LoadBalancerDescriptions[?VPCId=='$VPC_ID'].LoadBalancerName\" --output text")
    ours = f"{elbs} | tr '\\t' '\\n' | grep -E '^a[0-9a-f]{{31}}$'"
    return (f"{LOAD_BALANCERS}\n"
            'kubectl get svc --all-namespaces -o jsonpath="$LOAD_BALANCERS" |\n'
            '  while read -r namespace service; do kubectl --namespace="$namespace" delete svc '
            '"$service"; done\n'
            f"VPC_ID=$({vpc_lookup})\n"
            + rb.bounded_wait(f'[ -z "$({ours})" ]', rb.HELPER_SECONDS,
                              "the Services' load balancers are not gone", [elbs]))


def mount_command(source: str, target: str) -> str:
    return (f"sudo mkdir -p {target} && sudo mount -t nfs4 -o {','.join(EFS_MOUNT_OPTIONS)} "
            f"{source}:/ {target}")


# --- The role of the eks runbook ------------------------------------------------------------
# The rights eksctl needs are a role's, which the user's AWS CLI profile takes (role_arn and
# source_profile): a profile of `aws configure sso` and an IAM user's keys take it alike, so no
# access key is ever made. The role trusts the account: whoever the account lets call
# sts:AssumeRole on it may take it (an IAM user through the group below).
TRUST_POLICY = "aws/iam-trust-policy.json"
ASSUME_ROLE_POLICY = "aws/iam-assume-role-policy.json"


def role_arn(account: str, role: str) -> str:
    return f"arn:aws:iam::{account}:role/{role}"


def trust_policy(account: str) -> dict[str, object]:
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
        "Action": "sts:AssumeRole"}]}


def assume_role_policy(account: str, role: str) -> dict[str, object]:
    """The IAM-user path's group policy: its one right is to take the role."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role_arn(account, role)}]}


def profile_for_role(cluster: str, account: str, role: str) -> str:
    """The user's AWS CLI profile: it takes the role from the profile the user signs in with
    (SOURCE_PROFILE: one of `aws configure sso`, or an IAM user's keys). Writes only the local
    AWS CLI configuration."""
    profile = user_profile(cluster)
    return (f"aws configure set --profile {q(profile)} role_arn {q(role_arn(account, role))}\n"
            f"aws configure set --profile {q(profile)} source_profile "
            '"${SOURCE_PROFILE:?set SOURCE_PROFILE to the AWS CLI profile you sign in with: '
            'one of aws configure sso, or the keys of an IAM user}"\n')


def role_policies(action: str, role: str, names: tuple[str, ...]) -> str:
    arns = "".join(f"  {MANAGED_POLICY_PREFIX}{name} \\\n" for name in names)
    return (f"for arn in \\\n{arns}; do\n"
            f'  aws iam {action}-role-policy --role-name {q(role)} --policy-arn "$arn"\n'
            "done\n")


def iam_role(role: str, policies: tuple[str, ...]) -> str:
    """The role, made once, its trust and its policies (managed, and aws/iam-policy.json inline)
    set again on every run; with IAM_USER, a group of the same name whose one right is to take
    it, the user in it. Every command can run twice."""
    return (f"aws iam get-role --role-name {q(role)} >/dev/null 2>&1 ||\n"
            f"  aws iam create-role --role-name {q(role)} \\\n"
            f'    --assume-role-policy-document "file://$OUT/{TRUST_POLICY}"\n'
            f"aws iam update-assume-role-policy --role-name {q(role)} \\\n"
            f'  --policy-document "file://$OUT/{TRUST_POLICY}"\n'
            + role_policies("attach", role, policies)
            + f"aws iam put-role-policy --role-name {q(role)} --policy-name {q(role)} \\\n"
            '  --policy-document "file://$OUT/aws/iam-policy.json"\n'
            'if [ -n "${IAM_USER:-}" ]; then\n'
            f"  aws iam get-group --group-name {q(role)} >/dev/null 2>&1 ||\n"
            f"    aws iam create-group --group-name {q(role)}\n"
            f"  aws iam put-group-policy --group-name {q(role)} --policy-name {q(role)} \\\n"
            f'    --policy-document "file://$OUT/{ASSUME_ROLE_POLICY}"\n'
            f'  aws iam add-user-to-group --group-name {q(role)} --user-name "$IAM_USER"\n'
            "fi\n")


def iam_role_removed(role: str) -> str:
    """The group (its users out first) and the role (its policies first), each only where it
    exists: a removal cut short can run again."""
    users = (f"aws iam get-group --group-name {q(role)} --query 'Users[].UserName' "
             "--output text")
    attached = (f"aws iam list-attached-role-policies --role-name {q(role)} "
                "--query 'AttachedPolicies[].PolicyArn' --output text")
    inline = (f"aws iam list-role-policies --role-name {q(role)} --query 'PolicyNames[]' "
              "--output text")
    return (f"if aws iam get-group --group-name {q(role)} >/dev/null 2>&1; then\n"
            f"  for user in $({users}); do\n"
            f'    aws iam remove-user-from-group --group-name {q(role)} --user-name "$user"\n'
            "  done\n"
            f"  aws iam delete-group-policy --group-name {q(role)} --policy-name {q(role)} "
            "|| true\n"
            f"  aws iam delete-group --group-name {q(role)}\n"
            "fi\n"
            f"if aws iam get-role --role-name {q(role)} >/dev/null 2>&1; then\n"
            f"  for arn in $({attached}); do\n"
            f'    aws iam detach-role-policy --role-name {q(role)} --policy-arn "$arn"\n'
            "  done\n"
            f"  for name in $({inline}); do\n"
            f'    aws iam delete-role-policy --role-name {q(role)} --policy-name "$name"\n'
            "  done\n"
            f"  aws iam delete-role --role-name {q(role)}\n"
            "fi\n")


def stack_command(operation: str, stack: str, region: str | None = None) -> str:
    """`aws cloudformation OPERATION` of `stack`, in `region` where it is not the profile's (the
    budget's stack lives in us-east-1)."""
    where = f" --region {q(region)}" if region else ""
    return f"aws cloudformation {operation} --stack-name {q(stack)}{where}"


def stack_failures(stack: str, region: str | None = None) -> str:
    """The command that prints why a CloudFormation stack failed: its failed events' reasons."""
    return (f"{stack_command('describe-stack-events', stack, region)} --query "
            "\"StackEvents[?ends_with(ResourceStatus, 'FAILED')]."
            "[LogicalResourceId,ResourceStatusReason]\" --output text | head -n 20")


def or_stack_failures(*stacks: str, region: str | None = None) -> str:
    """What follows a command that makes or deletes `stacks` (eksctl's: the cluster's and the
    node group's): if it failed, print why (each stack's failed events) and fail."""
    told = "".join(f"  echo {q(f'the failed events of the stack {stack}:')} >&2\n"
                   f"  {stack_failures(stack, region)} >&2 || true\n" for stack in stacks)
    return f" || {{\n{told}  false\n}}\n"


# The states of a stack that failed: one whose creation rolled back cannot be updated, and one
# whose deletion failed stays, so each is deleted before the stack is made again.
FAILED_STACK_STATES = ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED", "DELETE_FAILED")


def indented_after_first(text: str, prefix: str) -> str:
    first, rest = text.split("\n", 1)
    return f"{first}\n{textwrap.indent(rest, prefix)}"


def stack_removed(stack: str, only_failed: bool = False, region: str | None = None) -> str:
    """Delete `stack` where it is left (only where it failed, with `only_failed`) and wait until
    it is gone; if that fails, print why. (A block that asks this has made sure its AWS
    credentials work: SIGNED_IN.)"""
    states = "|".join(FAILED_STACK_STATES) if only_failed else "?*"
    told = (f"the stack {stack} failed before: it is deleted" if only_failed
            else f"the stack {stack} is left: it is deleted")
    status = (f"{stack_command('describe-stacks', stack, region)} "
              "--query 'Stacks[0].StackStatus' --output text")
    return (f'case "$({status} 2>/dev/null || true)" in\n'
            f"  {states})\n"
            f"    echo {q(told)}\n"
            f"    {stack_command('delete-stack', stack, region)}\n"
            f"    {stack_command('wait stack-delete-complete', stack, region)}"
            + indented_after_first(or_stack_failures(stack, region=region), "    ")
            + "    ;;\n"
            "esac\n")


# The first line of a block that asks AWS whether something is there: with an expired SSO
# session or a wrong profile every such question would answer "no", and a teardown or a status
# would say nothing is left while it all bills on.
SIGNED_IN = "aws sts get-caller-identity >/dev/null  # the profile works: no answer is a no\n"


def mount_targets_available(seconds: int) -> str:
    """Wait until every mount target of FILE_SYSTEM_ID is available, at most `seconds`: a first
    mount can fail while a new one's DNS name propagates."""
    pending = ('aws efs describe-mount-targets --file-system-id "$FILE_SYSTEM_ID" --query '
               "\"MountTargets[?LifeCycleState!='available'].MountTargetId\" --output text")
    return rb.bounded_wait(f'[ -z "$({pending})" ]', seconds,
                           "the file system's mount targets are not all available",
                           ['aws efs describe-mount-targets --file-system-id "$FILE_SYSTEM_ID" '
                            "--output table"])


# --- What a cluster tool put in S3 ------------------------------------------------------------
# kube-aws and kube-up.sh upload to a bucket the user may share with others: the runbook records
# the keys that appeared during the upload, and the teardown removes those keys and no other
# (a bucket the runbook made, recorded in $ASSETS/bucket-created, goes whole).
S3_MADE = '"$ASSETS/s3-made"'


def s3_keys(bucket: str, prefix: str) -> str:
    """The command listing every key below `prefix` in `bucket`, one a line (a key may hold
    spaces), sorted; nothing where there is none. An error fails it: no answer is no list."""
    return (f"aws s3api list-objects-v2 --bucket {q(bucket)} --prefix {q(prefix)} "
            "--query 'Contents[].[Key]' --output text | sed '/^None$/d' | sort")


def s3_upload_recorded(bucket: str, prefix: str, upload: str) -> str:
    """Run `upload` and append to S3_MADE the keys below `prefix` it made (those that were not
    there before it). A bucket not there before is the upload's own (the tool makes it), so
    the runbook's, recorded as a bucket it made."""
    return (f"if aws s3api head-bucket --bucket {q(bucket)} 2>/dev/null; then\n"
            f'  {s3_keys(bucket, prefix)} > "$ASSETS/s3-before"\n'
            "else\n"
            '  : > "$ASSETS/s3-before"; touch "$ASSETS/bucket-created"\n'
            "fi\n"
            f"{upload}\n"
            f'{s3_keys(bucket, prefix)} | comm -13 "$ASSETS/s3-before" - >> {S3_MADE}\n')


def s3_made_removed(bucket: str) -> str:
    """Remove what the runbook put in S3: the recorded keys one by one, or, where it made the
    bucket, the bucket whole; each record goes once done, so a teardown can run again."""
    return ('if [ -f "$ASSETS/bucket-created" ]; then\n'
            f"  aws s3 rb {q(f's3://{bucket}')} --force\n"
            '  rm "$ASSETS/bucket-created"\n'
            f"elif [ -f {S3_MADE} ]; then\n"
            f"  while read -r key; do aws s3 rm {q(f's3://{bucket}/')}\"$key\"; done < {S3_MADE}\n"
            "fi\n"
            f"rm -f {S3_MADE}\n")
