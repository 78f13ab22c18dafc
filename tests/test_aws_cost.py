"""Every AWS runbook says what the cluster as specified costs an hour, how long it takes and what
it needs: each row is the vendored price times the spec's count, priced in the spec's region
where the table has it and labelled with the region it used where not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from paddlegen.profiles.aws import cost, data

from conftest import GOLDEN
from profile_harness import golden_names, goldens_of, profile_names, profile_of, uses_aws

# The goldens of the profiles of the AWS package (profiles/aws).
AWS_GOLDENS = [golden for golden in golden_names() if uses_aws(profile_of(golden))]
ROW = re.compile(r"^\| (\d+) x (\S+)(?: \([a-z]+\))?, on demand \| \$([\d.]+)(?: \((\S+)'s "
                 r"price\))? \|$", re.M)


def before_you_start(golden: str) -> str:
    runbook = (GOLDEN / golden / "out" / "RUNBOOK.md").read_text()
    return runbook[runbook.index("## Before you start"):runbook.index("\n## 0. ")]


def test_every_aws_profile_has_a_golden_with_a_cost_section() -> None:
    aws = [profile for profile in profile_names() if uses_aws(profile)]
    assert aws and all(goldens_of(profile) for profile in aws)
    for golden in AWS_GOLDENS:
        assert "on demand |" in before_you_start(golden), golden
    for golden in sorted(set(golden_names()) - set(AWS_GOLDENS)):  # no AWS, no bill
        assert "on demand" not in (GOLDEN / golden / "out" / "RUNBOOK.md").read_text(), golden


@pytest.mark.parametrize("golden", AWS_GOLDENS)
def test_each_row_is_the_table_price_times_the_count_and_the_total_their_sum(
        golden: str) -> None:
    section = before_you_start(golden)
    region = YAML(typ="safe").load((GOLDEN / golden / "spec.yaml").read_text())["cluster"].get(
        "region", "us-west-2")  # kube-up's golden derives it from its zone
    ec2 = data("prices.json")["ec2OnDemandPerHour"]
    rows = ROW.findall(section)
    assert rows
    for count, kind, price, elsewhere in rows:
        priced_in = elsewhere or region
        assert (elsewhere == "") == (ec2[region].get(kind) is not None)
        # printed to a tenth of a cent (money())
        assert float(price) == pytest.approx(int(count) * ec2[priced_in][kind], abs=0.0005)
    prices = [float(p) for p in re.findall(r"^\| (?!total)[^|]+ \| \$([\d.]+)", section, re.M)]
    total = re.search(r"^\| total \| \$([\d.]+) \|$", section, re.M)
    assert total and float(total[1]) == pytest.approx(sum(prices), abs=0.0005 * len(prices))
    assert "- [ ] a shell in the directory of this file (`cd out/`)" in section
    assert "It takes about" in section


def test_the_tutorial_clusters_are_priced_as_the_seeds_size_them() -> None:
    # seed 001/003: kube-aws v0.9.1's defaults, one controller and one etcd node on m3.medium,
    # and 3 workers (training.nodes); kube-up: an m3.medium master and 3 m3.large nodes
    assert re.findall(r"^\| (.+), on demand \|", before_you_start("kube-aws"), re.M) == [
        "1 x m3.medium (controller)", "1 x m3.medium (etcd)", "3 x m3.medium (workers)"]
    assert re.findall(r"^\| (.+), on demand \|", before_you_start("kube-up"), re.M) == [
        "1 x m3.medium (master)", "3 x m3.large (nodes)"]
    assert "load balancer" in before_you_start("kube-aws-v0.9.9")
    assert "NAT" not in before_you_start("kube-aws")  # its nodes sit in a public subnet
    assert "| one NAT gateway | $0.045 (us-east-2's price) |" in before_you_start("eks")


def test_a_price_is_the_regions_own_else_a_reference_regions_named() -> None:
    assert cost.regional({"us-west-2": 2.0, "us-east-1": 1.0}, "us-west-2") == (2.0, None)
    assert cost.regional({"us-east-2": 3.0, "us-east-1": 1.0}, "eu-west-1") == (1.0, "us-east-1")
    assert cost.regional({"us-east-2": 3.0}, "eu-west-1") == (3.0, "us-east-2")
    assert cost.regional({"eu-west-1": 3.0}, "us-west-2") == (None, None)
    assert cost.price_cell(cost.instances("us-east-1", "g5.xlarge", 2)) == "$2.012"
    assert cost.price_cell(cost.instances("us-west-2", "no.such", 2)) == "not in the table"
    assert cost.money(0.045) == "$0.045" and cost.money(0.1) == "$0.10"


def test_the_price_table_names_its_sources_and_no_machine_path() -> None:
    prices = data("prices.json")
    assert prices["currency"] == "USD"
    for source in ("karpenter-provider-aws", "skypilot-catalog", "ec2instances-info",
                   "vpc/pricing"):
        assert source in prices["_origin"]
    assert "/tmp" not in Path(cost.__file__).with_name("prices.json").read_text()
