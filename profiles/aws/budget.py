"""aws/budget.cfn.yaml: the eks profile's optional cost guard, an AWS Budgets budget that e-mails
`cluster.alertEmail` as the account's cost nears, then passes, `cluster.monthlyBudget`.

A COST budget of the calendar month, in USD, alerting at 50, 80 and 100 % of the actual cost and
at 100 % of the forecast one. It is the account's budget, named after the cluster, not a budget
of the cluster's resources alone: that would filter on a tag, and a user-defined tag counts in
Budgets only once the account's management (payer) account has activated it as a cost-allocation
tag, from then on (AWS Billing User Guide, "Using user-defined cost allocation tags",
docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/custom-tags.html). A filter the runbook
cannot activate would make a budget that silently counts nothing; the account's whole cost is
what the bill shows, and an over-estimate is the safe side of a guard.

The stack lives in us-east-1 whatever the cluster's region (BUDGET_REGION says why), so its name
carries the region too: two clusters of one name in two regions keep two stacks and two budgets.

The amount and the address are written into the template, not taken as parameters: the spec is
their one source, `build --check` sees a change to either as drift, and the runbook's deploy
needs no overrides that could disagree with the spec.
"""

from __future__ import annotations

from collections.abc import Iterable
from shlex import quote as q
from typing import Any, Protocol

from paddlegen.compiler import runbook as rb
from paddlegen.compiler.explain import wrapped
from paddlegen.compiler.rules import Violation, rule
from paddlegen.profiles.aws.cost import money
from paddlegen.schema.patterns import grammar

# AWS Budgets is one endpoint for the partition (botocore's data/endpoints.json: budgets is not
# regionalized, partitionEndpoint aws-global, budgets.amazonaws.com signed for us-east-1), and
# CloudFormation offers AWS::Budgets::Budget in some regions only: "Resource availability may
# vary by Region" (AWS CloudFormation Template Reference, "CloudFormation resource provider
# schemas", docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/resource-type-schemas.html).
# Those per-region schemas, as cfn-lint 1.58.0 bundles them, have the type in us-east-1,
# us-west-2 and eu-central-1 but not in eu-north-1, ap-southeast-7 or af-south-1, regions a
# cluster may be in. So the stack is always deployed in us-east-1, Budgets' own region.
BUDGET_REGION = "us-east-1"
TEMPLATE_FILE = "aws/budget.cfn.yaml"
ACTUAL_THRESHOLDS = (50, 80, 100)  # per cent of the amount, of the cost so far this month
FORECASTED_THRESHOLDS = (100,)  # per cent of the amount, of the month's forecast cost
# AWS Budgets' limit of a budget name (CreateBudget's BudgetName: 1 to 100 characters).
BUDGET_NAME_MAX = 100
# The budgets a spec's monthlyBudget may set, in USD: at least a cent, at most a billion, so
# that the amount is always written in plain digits (Python writes floats of 1e16 and more, or
# under 1e-4, with an exponent, which the Budgets API's amounts, ([0-9]*\.)?[0-9]+, refuse).
MIN_MONTHLY_BUDGET = 0.01
MAX_MONTHLY_BUDGET = 1_000_000_000
# What CloudFormation does with the deploying user's rights when it makes, changes or deletes the
# budget (the handlers' permissions in AWS::Budgets::Budget's resource schema, as cfn-lint 1.58.0
# bundles it): the IAM user the runbook runs as needs them, on budget_arn's budget.
IAM_ACTIONS = ("budgets:ModifyBudget", "budgets:ViewBudget", "budgets:TagResource",
               "budgets:UntagResource", "budgets:ListTagsForResource")
# The resource's handlers also read billing views (its schema's create, read and update
# permissions), an action of another service, on another resource: the account's views.
BILLING_VIEW_ACTIONS = ("billing:GetBillingViewData",)

# An address as people write them: RFC 5322's dot-atom local part of at most 64 characters
# (without '`', which Markdown would take for code) and a domain of DNS labels whose last
# starts with a letter; 254 characters in all (RFC 5321's limit of a path, less its brackets).
# No quoted local parts or address literals: AWS's alert mail is for a mailbox people read.
EMAIL = grammar(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_{|}~-]{1,64}@"
    r"([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$",
    "an e-mail address such as ml-team@example.com",
    254,
)


def stack_name(cluster: str, region: str) -> str:
    """The budget's CloudFormation stack, in BUDGET_REGION: `<cluster>-<region>-budget`."""
    return f"{cluster}-{region}-budget"


def budget_name(cluster: str, region: str) -> str:
    """The budget's name in AWS Budgets, unique in the account: its stack's name, so that one
    name finds both (at most BUDGET_NAME_MAX characters: rule budget-fields)."""
    return stack_name(cluster, region)


def budget_arn(account_id: str, cluster: str, region: str) -> str:
    """The budget's ARN (no region: the service is global), for the IAM policy's resource."""
    return f"arn:aws:budgets::{account_id}:budget/{budget_name(cluster, region)}"


def budget_amount(monthly_budget: float) -> int | float:
    """The amount as the template writes it: a whole number of dollars without a fraction."""
    return int(monthly_budget) if float(monthly_budget).is_integer() else float(monthly_budget)


def notification(kind: str, threshold: int, alert_email: str) -> dict[str, Any]:
    """An e-mail to `alert_email` when the cost (`kind`: ACTUAL or FORECASTED) passes
    `threshold` per cent of the budget."""
    return {
        "Notification": {"NotificationType": kind, "ComparisonOperator": "GREATER_THAN",
                         "Threshold": threshold, "ThresholdType": "PERCENTAGE"},
        "Subscribers": [{"SubscriptionType": "EMAIL", "Address": alert_email}],
    }


def template(cluster: str, region: str, monthly_budget: float, alert_email: str
             ) -> dict[str, Any]:
    """aws/budget.cfn.yaml: the budget of the account's monthly cost, with its four alerts."""
    notifications = [
        *(notification("ACTUAL", t, alert_email) for t in ACTUAL_THRESHOLDS),
        *(notification("FORECASTED", t, alert_email) for t in FORECASTED_THRESHOLDS)]
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": f"paddlegen cost guard of {cluster} ({region}): the account's monthly "
                       "budget",
        "Resources": {
            "Budget": {
                "Type": "AWS::Budgets::Budget",
                "Properties": {
                    # No CostFilters (the whole account: see the module's docstring), no
                    # TimePeriod (from this month on, as Budgets starts one by default).
                    "Budget": {
                        "BudgetName": budget_name(cluster, region),
                        "BudgetType": "COST",
                        "TimeUnit": "MONTHLY",
                        "BudgetLimit": {"Amount": budget_amount(monthly_budget),
                                        "Unit": "USD"},
                    },
                    "NotificationsWithSubscribers": notifications,
                },
            },
        },
    }


def deploy_lines(cluster: str, region: str) -> str:
    """Make (or update) the budget's stack; a deploy that changes nothing is no error, so the
    block can be run again."""
    return wrapped(["aws cloudformation deploy", f"--stack-name {q(stack_name(cluster, region))}",
                    f'--template-file "$OUT/{TEMPLATE_FILE}"', "--no-fail-on-empty-changeset",
                    f"--region {BUDGET_REGION}"]) + "\n"


def cost_text(cluster: str, region: str, monthly_budget: float, alert_email: str) -> str:
    """The runbook's paragraph on the cost guard, for its cost section. Its price: AWS's Price
    List offer for AWS Budgets (service code AWSBudgets, effective 2020-10-01) charges $0.00 a
    budget-day for budgets that notify, $0.10 an action-enabled budget-day past the first 62 a
    month and $0.01 a report delivered; "the first two budgets are free, then $0.02 a day each"
    is the Billing User Guide's older word (budgets-managing-costs.html), which that offer
    replaced. Its lag: "AWS Budgets information is updated up to three times a day" (AWS Cost
    Management User Guide, budgets-managing-costs.html)."""
    actual = ", ".join(str(t) for t in ACTUAL_THRESHOLDS[:-1])
    return rb.fill(
        f"A budget of {money(float(monthly_budget))} a month (AWS Budgets' "
        f"`{budget_name(cluster, region)}`) e-mails {alert_email} when the account's cost this "
        f"month passes {actual} and {ACTUAL_THRESHOLDS[-1]} % of it, and when the forecast for "
        f"the month passes {FORECASTED_THRESHOLDS[0]} %. It counts the whole account, not "
        "this cluster alone (a budget of the cluster's resources would need a cost-allocation "
        "tag activated by the account's payer first), it stops nothing, and its figures lag: "
        "AWS updates them up to three times a day. Its stack is in "
        f"{BUDGET_REGION}, AWS Budgets' region, and teardown removes it. A budget that only "
        "alerts costs nothing: AWS bills budgets with actions, and budget reports.")


# The parts of a spec budget-fields reads.
class BudgetCluster(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def region(self) -> str: ...
    @property
    def monthly_budget(self) -> float | None: ...
    @property
    def alert_email(self) -> str | None: ...


class WithBudget(Protocol):
    @property
    def cluster(self) -> BudgetCluster: ...


@rule("budget-fields", reads=("cluster.monthlyBudget", "cluster.alertEmail", "cluster.name",
                              "cluster.region"))
def budget_fields(spec: WithBudget) -> Iterable[Violation]:
    """cluster.monthlyBudget and cluster.alertEmail come together (a budget alerts someone; an
    address is alerted about a budget), and with them the budget's name (cluster.name, then
    cluster.region, then "budget", joined by '-') fits AWS Budgets' 100 characters."""
    c = spec.cluster
    if c.monthly_budget is not None and c.alert_email is None:
        yield ("cluster", "monthlyBudget"), (
            "a budget with nobody to alert; add cluster.alertEmail, or remove monthlyBudget")
    elif c.alert_email is not None and c.monthly_budget is None:
        yield ("cluster", "alertEmail"), (
            "an address to alert with no budget to watch; add cluster.monthlyBudget (USD a "
            "month), or remove alertEmail")
    elif c.monthly_budget is not None:
        name = budget_name(c.name, c.region)
        if len(name) > BUDGET_NAME_MAX:
            spare = BUDGET_NAME_MAX - len(name) + len(c.name)
            yield ("cluster", "name"), (
                f"the budget's name {name} has {len(name)} characters, and AWS Budgets takes "
                f"{BUDGET_NAME_MAX}; with a monthlyBudget, shorten the name to at most {spare}")
