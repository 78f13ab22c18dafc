"""What a cluster on AWS costs an hour as specified, and what a runbook needs before it starts:
the "Before you start" section of every AWS runbook, priced from `prices.json` beside this
module (its _origin names the sources, their regions and dates)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paddlegen.compiler import runbook as rb
from paddlegen.profiles.aws import data

# The regions a price missing for the cluster's region is taken from, in this order: the ones
# the table's sources price most fully.
REFERENCE_REGIONS = ("us-east-1", "us-east-2")
PRICE_TABLE = "profiles/aws/prices.json"

# EC2's on-demand vCPU quotas (Service Quotas), by the first letter of the instance family.
QUOTAS = (("p", "Running On-Demand P instances"), ("g", "Running On-Demand G and VT instances"),
          ("", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"))


@dataclass(frozen=True)
class Cost:
    part: str
    per_hour: float | None  # None: the table has no price for it
    priced_in: str | None = None  # the region of the price, when not the cluster's


def regional(prices: Mapping[str, Any], region: str) -> tuple[Any, str | None]:
    """The region's own price, else a reference region's and that region's name."""
    if prices.get(region) is not None:
        return prices[region], None
    for other in REFERENCE_REGIONS:
        if prices.get(other) is not None:
            return prices[other], other
    return None, None


def instances(region: str, instance_type: str, count: int, role: str = "") -> Cost:
    """`count` EC2 instances of a type on demand."""
    by_region = {name: table.get(instance_type)
                 for name, table in data("prices.json")["ec2OnDemandPerHour"].items()}
    price, elsewhere = regional(by_region, region)
    return Cost(f"{count} x {instance_type}{role}, on demand",
                None if price is None else count * price, elsewhere)


def nat_gateway(region: str) -> Cost:
    price, elsewhere = regional(data("prices.json")["natGatewayPerHour"], region)
    return Cost("one NAT gateway", price, elsewhere)


def eks_control_plane(version: str, support: str) -> Cost:
    return Cost(f"EKS control plane ({version}, {support} support)",
                data("prices.json")["eksClusterPerHour"][support])


def money(amount: float) -> str:
    """Dollars with cents, and a tenth of a cent where one is charged ($0.045)."""
    text = f"{amount:,.3f}"
    return f"${text[:-1] if text.endswith('0') else text}"


def price_cell(cost: Cost) -> str:
    if cost.per_hour is None:
        return "not in the table"
    return money(cost.per_hour) + (f" ({cost.priced_in}'s price)" if cost.priced_in else "")


def vcpu_quota(region: str, instance_types: Mapping[str, int]) -> str:
    """The checklist line for the EC2 quotas the instances need (type -> count)."""
    from paddlegen.profiles.aws import instance_types as known

    table = known()
    needs: dict[str, int] = {}
    for instance_type, count in instance_types.items():
        quota = next(name for prefix, name in QUOTAS if instance_type.startswith(prefix))
        facts = table.get(instance_type)
        needs[quota] = needs.get(quota, 0) + (count * facts["vcpu"] if facts else 0)
    wanted = "; ".join(f"{vcpus} vCPUs of \"{quota}\"" if vcpus else f"\"{quota}\""
                       for quota, vcpus in needs.items())
    gpus = any(quota != QUOTAS[-1][1] for quota in needs)
    return (f"EC2 quota for {wanted} in {region} (Service Quotas"
            + ("; a new account often has none for GPU types)" if gpus else ")"))


def before_you_start(region: str, costs: list[Cost], on_top: str, duration: str,
                     needs: list[str]) -> str:
    """The section: the hourly cost as a table, how long it takes, and a checklist."""
    rows = "".join(f"| {cost.part} | {price_cell(cost)} |\n" for cost in costs)
    known = [cost.per_hour for cost in costs if cost.per_hour is not None]
    total = money(sum(known)) + ("" if len(known) == len(costs) else ", and what the table lacks")
    efs, efs_region = regional(data("prices.json")["efsStandardPerGBMonth"], region)
    efs_where = f" ({efs_region}'s price)" if efs_region else ""
    checklist = "".join(f"- [ ] {need}\n" for need in needs)
    estimate = rb.fill(
        f"What the cluster as specified costs an hour on demand in {region}: an estimate from "
        f"the price table vendored in `{PRICE_TABLE}` (its sources and dates are inside); a row "
        f"priced in another region, for want of {region}'s, says so. {on_top} come on top: EFS "
        f"Standard stores a GB for about {money(efs)} a month{efs_where}.")
    return f"""
## Before you start

{estimate}

| part | per hour |
| --- | --- |
{rows}| total | {total} |

{rb.fill(duration)} You need:

{checklist}"""
