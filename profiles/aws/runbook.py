"""Runbook pieces of the AWS profiles: IAM, CloudFormation, the user's AWS CLI profile, load
balancers and NFS mounts of EFS."""

from __future__ import annotations

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
    return (f"{LOAD_BALANCERS}\n"
            'kubectl get svc --all-namespaces -o jsonpath="$LOAD_BALANCERS" |\n'
            '  while read -r namespace service; do kubectl --namespace="$namespace" delete svc '
            '"$service"; done\n'
            f"VPC_ID=$({vpc_lookup})\n"
            f"until [ -z \"$({elbs} | tr '\\t' '\\n' | grep -E '^a[0-9a-f]{{31}}$')\" ]; do "
            "sleep 10; done\n")


def mount_command(source: str, target: str) -> str:
    return (f"sudo mkdir -p {target} && sudo mount -t nfs4 -o {','.join(EFS_MOUNT_OPTIONS)} "
            f"{source}:/ {target}")
