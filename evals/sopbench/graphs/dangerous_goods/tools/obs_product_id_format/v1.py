"""SOP-Bench dangerous goods 5.1: the product id has the ``P_`` prefix and a valid character set.

The SOP's failure examples are a missing prefix and an invalid character set; it names no
length, so none is checked.
"""

import re

from sopgraph.graphs.model import Verdict

FORMAT = re.compile(r"^P_[A-Za-z0-9]+$")


async def run(input: dict, ctx) -> Verdict:
    pid = str(input.get("product_id") or "").strip()
    ok = bool(FORMAT.match(pid))
    return Verdict(
        value=ok,
        observed={"product_id": pid},
        threshold="P_ + letters/digits",
        explanation=f"product id {pid!r} {'matches' if ok else 'does not match'} P_XXXXX",
    )
