"""SOP-Bench referral abuse 5.5.1: count each category's indicators and pick the violation type.

Step 2 reads: a closure category (abusive creation, misleading ad copy) that meets its
threshold wins, the higher score first; else the highest-scoring non-closure category that
meets its threshold; ties follow Abusive > Misleading > Personal Orders (> No Violation,
which the SOP's tie order does not list); nothing at threshold is INCONCLUSIVE.
"""

from sopgraph.graphs.model import Verdict

PRIORITY = [
    "Abusive Account Creation",
    "Misleading Ad Copy",
    "Personal Orders (Related)",
    "No Violation",
]
CLOSURE = PRIORITY[:2]


def _bool(value) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    return None


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


async def run(input: dict, ctx) -> Verdict:
    data = {
        **(ctx.parents["obs_account"].observed or {}),
        **(ctx.parents["obs_traffic"].observed or {}),
    }
    p = ctx.params
    b = {
        k: _bool(data.get(k))
        for k in (
            "address_validity",
            "email_pattern_suspicious",
            "website_verified",
            "login_geographic_consistency",
            "payment_method_shared",
            "order_patterns_suspicious",
        )
    }
    connected = _num(data.get("connected_accounts"))
    quality = str(data.get("referral_source_quality") or "").strip().lower()
    ctr = _num(data.get("click_through_rate"))
    scores = {
        "Abusive Account Creation": sum(
            [
                b["address_validity"] is False,
                b["email_pattern_suspicious"] is True,
                b["website_verified"] is False,
                connected >= p["many_connected_accounts"],
                b["login_geographic_consistency"] is False,
            ]
        ),
        "Misleading Ad Copy": sum(
            [
                b["website_verified"] is False,
                quality in ("low", "medium"),
                b["order_patterns_suspicious"] is True,
                ctr > p["high_click_through"],
            ]
        ),
        "Personal Orders (Related)": sum(
            [
                b["payment_method_shared"] is True,
                0 < connected < p["many_connected_accounts"],
                b["order_patterns_suspicious"] is True,
                quality == "high",
            ]
        ),
        "No Violation": sum(
            [
                b["address_validity"] is True,
                b["email_pattern_suspicious"] is False,
                b["website_verified"] is True,
                b["login_geographic_consistency"] is True,
                b["payment_method_shared"] is False,
                b["order_patterns_suspicious"] is False,
            ]
        ),
    }
    minimum = dict(
        zip(
            PRIORITY,
            (p["abusive_min"], p["misleading_min"], p["personal_min"], p["no_violation_min"]),
            strict=True,
        )
    )
    met = [c for c in PRIORITY if scores[c] >= minimum[c]]
    closure = [c for c in met if c in CLOSURE]
    pool = closure or met
    # max() keeps the first of equal scores, and PRIORITY is the SOP's tie order
    kind = max(pool, key=lambda c: scores[c]) if pool else "INCONCLUSIVE"
    return Verdict(
        value=True,
        observed={"violation_type": kind, "scores": scores},
        threshold=minimum,
        explanation=f"{kind}: {scores}",
    )
