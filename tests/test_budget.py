"""aws/budget.cfn.yaml, the eks profile's cost guard: linted by cfn-lint, its budget made by moto's
AWS Budgets, its shell lines checked by ShellCheck and run against moto's CloudFormation, and the
rule that pairs cluster.monthlyBudget with cluster.alertEmail."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from paddlegen.compiler.build import build
from paddlegen.compiler.problems import SpecError
from paddlegen.compiler.render import to_yaml
from paddlegen.profiles.aws import budget
from paddlegen.profiles.aws.runbook import stack_removed

from conftest import GOLDEN

BIN = Path(sys.executable).parent
SHELLCHECK = shutil.which("shellcheck", path=str(BIN)) or shutil.which("shellcheck")
CLUSTER, REGION, ACCOUNT = "paddle-eks", "us-west-2", "123456789012"  # moto's default account
EMAIL = "ml-team@example.com"
BUDGET_TYPE = "AWS::Budgets::Budget"
SPEC = (GOLDEN / "eks" / "spec.yaml").read_text()


def template(monthly_budget: float = 300.5) -> dict[str, Any]:
    return budget.template(CLUSTER, REGION, monthly_budget, EMAIL)


def budget_properties(made: dict[str, Any]) -> dict[str, Any]:
    [resource] = made["Resources"].values()
    assert resource["Type"] == BUDGET_TYPE
    properties: dict[str, Any] = resource["Properties"]
    return properties


def written(tmp_path: Path, made: dict[str, Any]) -> Path:
    """The template as the build writes it: YAML, at aws/budget.cfn.yaml."""
    path = tmp_path / budget.TEMPLATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_yaml(made))
    return path


def cfn_lint(path: Path, region: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BIN / "cfn-lint", path, "--regions", region],
                          capture_output=True, text=True, check=False)


# --- the template ------------------------------------------------------------------------------

@pytest.mark.conformance
@pytest.mark.parametrize("amount", [300, 300.5, 0.01, 1_000_000_000])
def test_cfn_lint_is_clean_in_the_region_the_stack_goes_to(amount: float, tmp_path: Path) -> None:
    result = cfn_lint(written(tmp_path, template(amount)), budget.BUDGET_REGION)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.conformance
def test_the_resource_type_is_not_in_every_region_a_cluster_may_be_in(tmp_path: Path) -> None:
    """Why the stack goes to us-east-1 and not to the cluster's region: CloudFormation's
    per-region resource schemas (cfn-lint's copy) lack AWS::Budgets::Budget in eu-north-1."""
    result = cfn_lint(written(tmp_path, template()), "eu-north-1")
    assert "E3006" in result.stdout, result.stdout + result.stderr


def test_the_budget_is_the_accounts_monthly_cost_in_usd_with_four_email_alerts() -> None:
    properties = budget_properties(template())
    assert properties["Budget"] == {
        "BudgetName": "paddle-eks-us-west-2-budget", "BudgetType": "COST", "TimeUnit": "MONTHLY",
        "BudgetLimit": {"Amount": 300.5, "Unit": "USD"}}  # no CostFilters: the whole account
    alerts = [(n["Notification"]["NotificationType"], n["Notification"]["Threshold"])
              for n in properties["NotificationsWithSubscribers"]]
    assert alerts == [("ACTUAL", 50), ("ACTUAL", 80), ("ACTUAL", 100), ("FORECASTED", 100)]
    for alert in properties["NotificationsWithSubscribers"]:
        assert alert["Notification"]["ComparisonOperator"] == "GREATER_THAN"
        assert alert["Notification"]["ThresholdType"] == "PERCENTAGE"
        assert alert["Subscribers"] == [{"SubscriptionType": "EMAIL", "Address": EMAIL}]
    assert "Parameters" not in template()  # the spec is the amount's and address's one source


def test_a_whole_amount_is_written_without_a_fraction() -> None:
    assert "Amount: 300\n" in to_yaml(template(300.0))
    assert "Amount: 1000000000\n" in to_yaml(template(1e9))
    assert "Amount: 0.01\n" in to_yaml(template(0.01))


def test_the_names_carry_the_cluster_and_its_region() -> None:
    assert budget.stack_name(CLUSTER, REGION) == "paddle-eks-us-west-2-budget"
    assert budget.budget_name(CLUSTER, REGION) == budget.stack_name(CLUSTER, REGION)
    assert budget.budget_arn(ACCOUNT, CLUSTER, REGION) == (
        "arn:aws:budgets::123456789012:budget/paddle-eks-us-west-2-budget")


# --- against the Budgets API: AWS's model (botocore) and moto's implementation ------------------

def api_request(properties: dict[str, Any]) -> dict[str, Any]:
    """CreateBudget's request for the resource's properties, as CloudFormation's handler sends
    it: the same shapes (the resource schema is the API's), but an API amount is a string."""
    limit = properties["Budget"]["BudgetLimit"]
    return {"AccountId": ACCOUNT,
            "Budget": {**properties["Budget"],
                       "BudgetLimit": {**limit, "Amount": str(limit["Amount"])}},
            "NotificationsWithSubscribers": properties["NotificationsWithSubscribers"]}


def made_in_moto(made: dict[str, Any]) -> dict[str, Any]:
    """The budget, its notifications and their subscribers, as moto's AWS Budgets holds them
    once the template's budget is made. Through a CloudFormation stack where moto's
    CloudFormation knows the type; moto 5.2.5's does not (it skips the resource with a warning
    and calls the stack CREATE_COMPLETE), so there the budget is made by CreateBudget with
    exactly the template's property values. moto's API has no DescribeSubscribersForNotification:
    the subscribers are read from its backend."""
    import boto3
    from moto import mock_aws
    from moto.budgets.models import budgets_backends
    from moto.cloudformation.parsing import resource_class_from_type

    name = budget.budget_name(CLUSTER, REGION)
    with mock_aws():
        budgets = boto3.client("budgets", region_name=budget.BUDGET_REGION)
        if resource_class_from_type(BUDGET_TYPE) is not None:
            cloudformation = boto3.client("cloudformation", region_name=budget.BUDGET_REGION)
            cloudformation.create_stack(StackName=budget.stack_name(CLUSTER, REGION),
                                        TemplateBody=json.dumps(made))
        else:
            budgets.create_budget(**api_request(budget_properties(made)))
        described = budgets.describe_budget(AccountId=ACCOUNT, BudgetName=name)["Budget"]
        notifications = budgets.describe_notifications_for_budget(
            AccountId=ACCOUNT, BudgetName=name)["Notifications"]
        held = budgets_backends[ACCOUNT]["aws"].budgets[ACCOUNT][name]
        return {"budget": described, "notifications": notifications,
                "subscribers": [n.subscribers for n in held.notifications]}


@pytest.mark.conformance
def test_moto_makes_the_budget_the_template_describes() -> None:
    made = made_in_moto(template())
    described = made["budget"]
    assert described["BudgetName"] == "paddle-eks-us-west-2-budget"
    assert (described["BudgetType"], described["TimeUnit"]) == ("COST", "MONTHLY")
    assert described["BudgetLimit"] == {"Amount": "300.5", "Unit": "USD"}
    assert "CostFilters" not in described
    assert [(n["NotificationType"], n["ComparisonOperator"], n["Threshold"], n["ThresholdType"])
            for n in made["notifications"]] == [
        ("ACTUAL", "GREATER_THAN", 50.0, "PERCENTAGE"), ("ACTUAL", "GREATER_THAN", 80.0,
                                                         "PERCENTAGE"),
        ("ACTUAL", "GREATER_THAN", 100.0, "PERCENTAGE"),
        ("FORECASTED", "GREATER_THAN", 100.0, "PERCENTAGE")]
    assert made["subscribers"] == [[{"SubscriptionType": "EMAIL", "Address": EMAIL}]] * 4


def test_every_value_is_one_the_budgets_api_model_allows() -> None:
    """botocore validates a request's members and types, moto none of its values: here the
    enums, patterns and lengths of AWS's own model of the Budgets API (botocore's
    budgets/service-2.json)."""
    import boto3

    model = boto3.client("budgets", region_name=budget.BUDGET_REGION).meta.service_model
    request = api_request(budget_properties(template()))

    def allowed(shape: str, value: Any) -> bool:
        meta = model.shape_for(shape).metadata
        text = str(value)
        # The model's patterns are Java's: BudgetName's has an inline (?i) mid-way, which
        # Python takes only at the start; ignoring case throughout changes nothing of the rest.
        pattern = meta.get("pattern", ".*")
        flags = re.IGNORECASE if "(?i)" in pattern else 0
        return (text in meta.get("enum", [text])
                and meta.get("min", 0) <= len(text) <= meta.get("max", len(text))
                and re.fullmatch(pattern.replace("(?i)", ""), text, flags) is not None)

    data = request["Budget"]
    assert allowed("BudgetName", data["BudgetName"])
    assert allowed("BudgetType", data["BudgetType"]) and allowed("TimeUnit", data["TimeUnit"])
    assert allowed("NumericValue", data["BudgetLimit"]["Amount"])
    assert allowed("UnitValue", data["BudgetLimit"]["Unit"])
    for alert in request["NotificationsWithSubscribers"]:
        notification = alert["Notification"]
        assert allowed("NotificationType", notification["NotificationType"])
        assert allowed("ComparisonOperator", notification["ComparisonOperator"])
        assert allowed("ThresholdType", notification["ThresholdType"])
        assert 0 <= notification["Threshold"] <= 100
        [subscriber] = alert["Subscribers"]
        assert allowed("SubscriptionType", subscriber["SubscriptionType"])
        assert allowed("SubscriberAddress", subscriber["Address"])


@pytest.mark.parametrize("amount", [0.01, 12.345, 300, 1e9])
def test_every_amount_the_spec_takes_is_written_in_plain_digits(amount: float) -> None:
    """The Budgets API's amounts are plain decimals (its NumericValue: ([0-9]*\\.)?[0-9]+)."""
    written_amount = budget_properties(template(amount))["Budget"]["BudgetLimit"]["Amount"]
    assert re.fullmatch(r"([0-9]*\.)?[0-9]+", str(written_amount))


# --- the runbook's lines -----------------------------------------------------------------------

def test_the_lines_deploy_and_remove_the_stack_in_us_east_1() -> None:
    deploy = budget.deploy_lines(CLUSTER, REGION)
    assert deploy == (
        "aws cloudformation deploy --stack-name paddle-eks-us-west-2-budget \\\n"
        '  --template-file "$OUT/aws/budget.cfn.yaml" --no-fail-on-empty-changeset '
        "--region us-east-1\n")
    removal = stack_removed(budget.stack_name(CLUSTER, REGION), region=budget.BUDGET_REGION)
    for line in ("aws cloudformation delete-stack --stack-name paddle-eks-us-west-2-budget "
                 "--region us-east-1\n",
                 "aws cloudformation wait stack-delete-complete --stack-name "
                 "paddle-eks-us-west-2-budget --region us-east-1 || {\n"):
        assert line in removal


@pytest.mark.conformance
@pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck is not installed (the test extra)")
def test_the_lines_pass_shellcheck() -> None:
    lines = budget.deploy_lines(CLUSTER, REGION) + stack_removed(
        budget.stack_name(CLUSTER, REGION), region=budget.BUDGET_REGION)
    assert SHELLCHECK is not None
    result = subprocess.run([SHELLCHECK, "--shell=bash", "-"], input=lines, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout


@pytest.mark.conformance
def test_removing_twice_succeeds() -> None:
    """The remove lines' two calls, through botocore (the AWS CLI's own library, waiter
    included) against moto's CloudFormation: a second run, the stack gone, succeeds too."""
    import boto3
    from moto import mock_aws

    stack = budget.stack_name(CLUSTER, REGION)
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name=budget.BUDGET_REGION)
        cloudformation.create_stack(StackName=stack, TemplateBody=json.dumps(
            {"Resources": {"Nothing": {"Type": "AWS::SNS::Topic"}}}))
        for _ in range(2):
            cloudformation.delete_stack(StackName=stack)
            cloudformation.get_waiter("stack_delete_complete").wait(
                StackName=stack, WaiterConfig={"Delay": 0, "MaxAttempts": 2})


def test_the_cost_text_says_what_alerts_whom_and_what_removes_it() -> None:
    text = budget.cost_text(CLUSTER, REGION, 300, EMAIL)
    flat = " ".join(text.split())
    assert "A budget of $300.00 a month" in flat
    assert f"e-mails {EMAIL}" in flat and "50, 80 and 100 %" in flat
    assert "forecast for the month passes 100 %" in flat
    assert "whole account" in flat and "teardown removes it" in flat
    assert all(len(line) <= 100 for line in text.splitlines())


# --- the spec's fields and the rule ------------------------------------------------------------

def with_cluster_lines(lines: str, spec: str = SPEC) -> bytes:
    anchor = "  workerInstanceType: m5.xlarge\n"
    assert anchor in spec
    return spec.replace(anchor, anchor + lines).encode()


def problems(raw: bytes) -> list[str]:
    with pytest.raises(SpecError) as raised:
        build(raw, "spec.yaml")
    return [str(p) for p in raised.value.problems]


def test_a_budget_and_an_address_build() -> None:
    result = build(with_cluster_lines(f"  monthlyBudget: 300\n  alertEmail: {EMAIL}\n"),
                   "spec.yaml")
    assert not [w for w in result.warnings if w.rule == "budget-fields"]


@pytest.mark.parametrize(("lines", "expected"), [
    ("  monthlyBudget: 300\n",
     "spec.yaml:18:18: cluster.monthlyBudget: a budget with nobody to alert; add "
     "cluster.alertEmail, or remove monthlyBudget [budget-fields]"),
    (f"  alertEmail: {EMAIL}\n",
     "spec.yaml:18:15: cluster.alertEmail: an address to alert with no budget to watch; add "
     "cluster.monthlyBudget (USD a month), or remove alertEmail [budget-fields]"),
])
def test_one_without_the_other_is_refused_where_it_is(lines: str, expected: str) -> None:
    assert problems(with_cluster_lines(lines)) == [expected]


@pytest.mark.parametrize(("lines", "expected"), [
    (f"  monthlyBudget: 0\n  alertEmail: {EMAIL}\n",
     "cluster.monthlyBudget: input should be greater than or equal to 0.01 (got 0) "
     "[out-of-range]"),
    (f"  monthlyBudget: .inf\n  alertEmail: {EMAIL}\n", "[out-of-range]"),
    (f"  monthlyBudget: '300'\n  alertEmail: {EMAIL}\n", "[wrong-type]"),
    ("  monthlyBudget: 300\n  alertEmail: ml-team@localhost\n",
     "cluster.alertEmail: 'ml-team@localhost' is not an e-mail address such as "
     "ml-team@example.com [bad-format]"),
])
def test_bad_values_are_refused(lines: str, expected: str) -> None:
    assert any(expected in line for line in problems(with_cluster_lines(lines))), \
        problems(with_cluster_lines(lines))


@pytest.mark.parametrize(("address", "valid"), [
    ("ml-team@example.com", True), ("first.last+paddle@mail.example.co.uk", True),
    ("o'brien@xn--bcher-kva.example", True), ("ml@example.com\n", False), ("ml@", False),
    ("@example.com", False), ("ml team@example.com", False), ("ml@example", False),
    ("ml@-example.com", False), ("ml@example.com.", False), ("`ml`@example.com", False),
    ("a" * 65 + "@example.com", False),
])
def test_the_address_grammar(address: str, valid: bool) -> None:
    assert (re.match(budget.EMAIL.regex, address) is not None) == valid


def cluster_of(name: str, monthly_budget: float | None, alert_email: str | None
               ) -> SimpleNamespace:
    return SimpleNamespace(cluster=SimpleNamespace(
        name=name, region=REGION, monthly_budget=monthly_budget, alert_email=alert_email))


def test_the_rule_passes_both_or_neither() -> None:
    assert list(budget.budget_fields.check(cluster_of(CLUSTER, None, None))) == []
    assert list(budget.budget_fields.check(cluster_of(CLUSTER, 300.0, EMAIL))) == []


def test_with_a_budget_the_name_fits_aws_budgets() -> None:
    fits = "a" * (budget.BUDGET_NAME_MAX - len("-us-west-2-budget"))
    assert list(budget.budget_fields.check(cluster_of(fits, 300.0, EMAIL))) == []
    assert list(budget.budget_fields.check(cluster_of(fits + "a", None, None))) == []
    [(path, message)] = budget.budget_fields.check(cluster_of(fits + "a", 300.0, EMAIL))
    assert path == ("cluster", "name")
    assert message.endswith(f"shorten the name to at most {len(fits)}")
