"""The 14 ABCD intents that branch on membership level, as condition-action steps.

Each intent is written as steps of ``graphs/importers/tod_procedure.py``, each citing the
guideline sentence it encodes (``data/guidelines.json``, quoted in the node's ``source``).
A data condition records the check its compiled tool makes (``Intent.data``: a field of the
scenario server's record and how it holds); ``build.py`` writes the SOPs and those tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sopgraph.graphs.importers.tod_procedure import Step

HERE = Path(__file__).resolve().parent
GUIDELINES = json.loads((HERE / "data" / "guidelines.json").read_text(encoding="utf-8"))
KB = json.loads((HERE / "data" / "kb.json").read_text(encoding="utf-8"))
END = "end-conversation"  # a button of the guidelines, not one of kb.json's 30 actions


def cite(flow: str, sub: str, where: str) -> str:
    """``"A2.s1"`` -> the quoted guideline text of actions[2].subtext[1] (``I0``: instructions[0])."""
    entry = GUIDELINES[flow]["subflows"][sub]
    parts = where.split(".")
    if parts[0].startswith("I"):
        text = entry["instructions"][int(parts[0][1:])]
    else:
        action = entry["actions"][int(parts[0][1:])]
        text = action["text"] if len(parts) == 1 else action["subtext"][int(parts[1][1:])]
    return f"ABCD guidelines: {flow} > {sub} > {where}: {' '.join(text.split())}"


class Intent:
    """Steps of one intent, with helpers that cite its guideline."""

    def __init__(self, key: str, flow: str, sub: str):
        self.key, self.flow, self.sub = key, flow, sub
        self.ids: set[str] = set()
        self.tools: dict[str, dict[str, Any]] = {}

    def _id(self, base: str) -> str:
        nid, n = base, 2
        while nid in self.ids:
            nid, n = f"{base}.{n}", n + 1
        self.ids.add(nid)
        return nid

    def act(self, button: str, text: str, where: str, nid: str | None = None) -> Step:
        meta = {"id": self._id(nid or button), "source": cite(self.flow, self.sub, where)}
        meta["api"] = {"name": button}
        return Step("action", text, meta=meta)

    def judge(self, cond: str, where: str, body: list[Step], nid: str) -> Step:
        meta = {"id": self._id(nid), "kind": "observation", "data": []}
        meta["source"] = cite(self.flow, self.sub, where)
        return Step("if", cond, body=body, meta=meta)

    def data(self, cond: str, where: str, body: list[Step], nid: str, **check: Any) -> Step:
        """A data condition: ``check`` is a record's ``field`` (``customer.member_level``) and
        how it holds: one of ``holds``, or ``within_days`` of the record's field ``of``."""
        meta = {"id": self._id(nid), "kind": "constraint", "data": [check["field"]]}
        meta["source"] = cite(self.flow, self.sub, where)
        self.tools[meta["id"]] = check
        return Step("if", cond, body=body, meta=meta)

    def level(self, levels: tuple[str, ...], where: str, body: list[Step], nid: str) -> Step:
        names = " or ".join(levels)
        cond = f"the customer's membership level is {names}"
        return self.data(cond, where, body, nid, field="customer.member_level", holds=levels)

    def oracle(self, where: str, body: list[Step]) -> Step:
        cond = "the Oracle says Yes (the company made the error)"
        return self.data(cond, where, body, "oracle-yes", field="system.oracle", holds=("yes",))


def go(nid: str) -> Step:
    return Step("goto", nid)


STOP = Step("stop")


def _returns(key: str, sub: str, reason: str) -> tuple[Intent, Step]:
    it = Intent(key, "Product Defect", sub)
    windows = {"silver": ("6 months", 182), "bronze": ("90 days", 90), "guest": ("30 days", 30)}

    def level_branch(level: str, where: str) -> Step:
        label, days = windows[level]
        checks = [
            it.data(
                f"the purchase date is within the last {label}",
                where,
                [go("enter-details")],
                f"{level}-within-{days}-days",
                field="order.purchase_date",
                within_days=days,
                of="order.today",
            ),
            it.judge(
                "the customer has a receipt", where, [go("enter-details")], f"{level}-receipt"
            ),
        ]
        if level != "guest":
            checks.append(
                it.data(
                    "the item is in its original packaging",
                    where,
                    [go("enter-details")],
                    f"{level}-packaging",
                    field="order.packaging",
                    holds=("yes",),
                )
            )
        cannot = it.act(END, "apologize and explain why the item cannot be returned", "A3.s1",
                        nid=f"{END}-{level}")  # fmt: skip
        return it.level((level,), where, [*checks, cannot, STOP], f"member-{level}")

    steps = [
        it.act("pull-up-account", "get the full name or account ID and pull up the account", "A0"),
        it.act("validate-purchase", "validate the purchase (username, email, order ID)", "A1"),
        it.act("membership", "enter the member level into Membership Privileges", "A2.s4"),
        it.level(
            ("gold",),
            "A2.s0",
            [
                it.act("enter-details", "get the full address for the return label", "A4"),
                it.act(
                    "update-order",
                    "process the return by mail, in store or at a drop off center",
                    "A5.s1",
                ),
                STOP,
            ],
            "member-gold",
        ),  # fmt: skip
        level_branch("silver", "A2.s1"),
        level_branch("bronze", "A2.s2"),
        level_branch("guest", "A2.s3"),
    ]
    intent = f"the customer wants to return an item because of its {reason}"
    return it, it.judge(intent, "A3", steps, "wants-return")


def _shipped(it: Intent, where: str, body: list[Step]) -> Step:
    cond = "the customer says the shipping status is 'Order Received' (not yet shipped)"
    return it.judge(cond, where, body, "not-yet-shipped")


def _order_start(it: Intent) -> list[Step]:
    return [
        it.act("pull-up-account", "get the full name or account ID and pull up the account", "A0"),
        it.act(
            "verify-identity", "look up the order with full name, account ID and order ID", "A1"
        ),  # fmt: skip
    ]


def build_intents() -> list[tuple[Intent, Step]]:
    out = [
        _returns("return_stain", "Return Due to Stain", "stain"),
        _returns("return_color", "Return Due to Color", "color"),
        _returns("return_size", "Return Due to Size", "size"),
    ]

    it = Intent("status_mystery_fee", "Order Issue", "Status Mystery Fee")
    out.append((it, it.judge("the customer believes an extra fee was added to their order", "I0", [
        *_order_start(it),
        it.act("ask-the-oracle", "ask the Oracle whether the company made an error", "A2.s0"),
        it.oracle("A2.s1", [
            it.act("update-order", "remove the fee: enter the overcharged amount", "A4.s1"), STOP]),
        it.act("membership", "ask for the membership level and enter it", "A3.s0"),
        it.level(("gold", "silver"), "A3.s1", [go("update-order")], "member-gold-silver"),
        it.act(END, "apologize: the extra fee stays (customer error)", "A3.s2"),
    ], "wants-fee-removed")))  # fmt: skip

    it = Intent("manage_upgrade", "Order Issue", "Manage Upgrade")
    out.append((it, it.judge("the customer wants to upgrade to overnight shipping", "I0", [
        *_order_start(it),
        it.act("shipping-status", "ask for the shipping status and enter it", "A2.s0"),
        _shipped(it, "A2.s1", [
            it.act("membership", "ask for the membership level and enter it", "A3.s0"),
            it.level(("gold",), "A3.s1", [
                it.act("update-order", "upgrade the shipping: enter 'tomorrow'", "A4.s0"), STOP,
            ], "member-gold"),
            it.judge("the customer agrees to charge $20 to the credit card on the account",
                     "A3.s2", [go("update-order")], "accepts-fee"),
            it.act(END, "apologize: the shipping cannot be upgraded", "I1", nid=f"{END}-declined"),
            STOP,
        ]),
        it.act(END, "explain the item has already shipped and will arrive soon", "A2.s2"),
    ], "wants-upgrade")))  # fmt: skip

    it = Intent("manage_downgrade", "Order Issue", "Manage Downgrade")
    out.append((it, it.judge("the customer wants to downgrade to next week delivery", "I0", [
        *_order_start(it),
        it.act("shipping-status", "ask for the shipping status and enter it", "A2.s0"),
        _shipped(it, "A2.s1", [
            it.act("membership", "find the membership level and enter it", "A3.s0"),
            it.act("update-order", "delay the shipping: enter 'next week'", "A4.s0"),
            STOP,
        ]),
        it.act("membership", "find the membership level and enter it", "A3.s0",
               nid="membership-shipped"),
        it.level(("gold", "silver", "bronze"), "A3.s1", [
            it.act(END, "tell the customer a credit for the shipping fee is added back",
                   "A3.s1", nid=f"{END}-credit"),
            STOP,
        ], "member-gold-silver-bronze"),
        it.act(END, "apologize: nothing can be done for a guest whose item shipped", "A3.s2"),
    ], "wants-downgrade")))  # fmt: skip

    it = Intent("manage_create", "Order Issue", "Manage Create")
    out.append((it, it.judge("the customer wants to add an item to their existing order", "I0", [
        *_order_start(it),
        it.act("shipping-status", "ask for the shipping status and enter it", "A2.s0"),
        _shipped(it, "A2.s1", [
            it.act("make-purchase", "enter the brand and item and make the purchase", "A4.s1"),
            STOP,
        ]),
        it.act("membership", "ask for the membership level and enter it", "A3.s1"),
        it.level(("gold", "silver"), "A3.s0", [go("make-purchase")], "member-gold-silver"),
        it.act(END, "apologize: the item cannot be added to the order", "I1"),
    ], "wants-add-item")))  # fmt: skip

    it = Intent("manage_cancel", "Order Issue", "Manage Cancel")
    out.append((it, it.judge("the customer wants to remove an item from their order", "I0", [
        *_order_start(it),
        it.act("shipping-status", "ask for the shipping status and enter it", "A2.s0"),
        _shipped(it, "A2.s1", [
            it.act("offer-refund", "offer the refund; the item is removed from the order",
                   "A2.s1"),
            STOP,
        ]),
        it.act("membership", "ask for the membership level and enter it", "A3"),
        it.level(("gold", "silver", "bronze"), "A3.s0", [go("offer-refund")],
                 "member-gold-silver-bronze"),
        it.act(END, "tell a guest to call back to return the item once it arrives", "A3.s1"),
    ], "wants-cancel")))  # fmt: skip

    for key, sub, what in [
        ("promo_code_invalid", "Promo Code Invalid", "is invalid"),
        ("promo_code_out_of_date", "Promo Code Out of Date", "is out of date"),
    ]:
        it = Intent(key, "Purchase Dispute", sub)
        out.append((it, it.judge(f"the customer complains that a promo code {what}", "I0", [
            it.act("pull-up-account", "get the full name or account ID and pull up the account",
                   "A0"),
            it.act("ask-the-oracle", "ask the Oracle whether the customer made an error", "A2.s1"),
            it.oracle("A2.s3", [
                it.act("promo-code", "generate a new promo code and share it", "A4.s1"), STOP]),
            it.act("membership", "enter the member level into Membership Privileges", "A3.s1"),
            it.level(("gold", "silver", "bronze"), "A3.s2", [go("promo-code")],
                     "member-gold-silver-bronze"),
            it.act(END, "apologize: nothing can be done for a guest", "A3.s3"),
        ], "complains-promo")))  # fmt: skip

    it = Intent("mistimed_billing_already_returned", "Purchase Dispute",
                "Mistimed Billing Already Returned")  # fmt: skip
    out.append((it, it.judge("the customer returned an item and has not received the credit",
                             "I0", [
        it.act("pull-up-account", "get the full name or account ID and pull up the account", "A0"),
        it.act("validate-purchase", "validate the purchase (username, email, order ID)", "A1"),
        it.act("record-reason", "ask how many days the customer has waited and enter it", "A2.s1"),
        it.judge("the customer has waited more than 7 days for the credit", "A2.s2", [
            it.act("update-order", "start processing the credit: enter 'give credit'", "A4.s1"),
            STOP,
        ], "waited-over-7-days"),
        it.act("membership", "ask for the membership level and enter it", "A3.s0"),
        it.level(("gold",), "A3.s1", [go("update-order")], "member-gold"),
        it.act(END, "apologize: the order cannot be updated", "A3.s2"),
    ], "wants-credit")))  # fmt: skip

    it = Intent("mistimed_billing_never_bought", "Purchase Dispute",
                "Mistimed Billing Never Bought")  # fmt: skip
    out.append((it, it.judge("the customer was billed for an item they never bought", "I0", [
        it.act("pull-up-account", "get the full name or account ID and pull up the account", "A0"),
        it.act("validate-purchase", "validate the purchase (username, email, order ID)", "A1"),
        it.act("ask-the-oracle", "ask the Oracle whether the customer made an error", "A2.s0"),
        it.oracle("A2.s1", [
            it.act("update-order", "start processing the credit: enter 'give credit'", "A4.s1"),
            STOP,
        ]),
        it.act("membership", "ask for the membership level and enter it", "A3.s0"),
        it.level(("gold",), "A3.s1", [go("update-order")], "member-gold"),
        it.act(END, "apologize: the order cannot be updated", "A3.s2"),
    ], "wants-credit")))  # fmt: skip

    it = Intent("manage_extension", "Subscription Inquiry", "Manage Extension")
    out.append((it, it.judge("the customer wants an extension to pay their subscription", "I0", [
        *_order_start(it),
        it.act("membership", "enter the member level into Membership Privileges", "A2.s0"),
        it.level(("gold",), "A2.s1", [
            it.act("update-account", "enter 'extend subscription'", "A3.s0"), STOP,
        ], "member-gold"),
        it.level(("silver",), "A2.s2", [
            it.judge("the customer is only 1 day late", "A2.s2", [go("update-account")],
                     "one-day-late"),
        ], "member-silver"),
        it.act("enter-details", "get a phone number for the manager's call back", "A4.s1"),
        it.act("notify-team", "enter 'manager' to notify the internal team", "A4.s3"),
    ], "wants-extension")))  # fmt: skip

    it = Intent("manage_dispute_bill", "Subscription Inquiry", "Manage Dispute Bill")
    paid = [
        it.judge("the customer has already paid the bill", "A4.s2", [
            it.act("offer-refund", "enter the refund amount and offer the refund", "A4.s2"),
            STOP,
        ], "already-paid"),
        it.act(END, "apologize for the misunderstanding (the bill is not paid yet)", "A4.s1",
               nid=f"{END}-unpaid"),
        STOP,
    ]  # fmt: skip
    out.append((it, it.judge("the customer disputes their subscription bill", "I0", [
        *_order_start(it),
        it.act("membership", "enter the member level into Membership Privileges", "A2.s0"),
        it.level(("gold",), "A2.s1", paid, "member-gold"),
        it.level(("silver",), "A2.s2", [
            it.judge("the amount billed wrongly is less than $10", "A2.s2", [go("already-paid")],
                     "under-10-dollars"),
        ], "member-silver"),
        it.act("ask-the-oracle", "ask the Oracle whether the customer is right", "A3"),
        it.oracle("A3.s0", [go("already-paid")]),
        it.act(END, "apologize: no refund (the Oracle says No)", "A3.s1"),
    ], "disputes-bill")))  # fmt: skip
    return out
