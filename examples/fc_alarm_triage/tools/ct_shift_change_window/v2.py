"""ct_shift_change_window: does the alarm fall within the first {shift_change_grace_min} minutes
of a shift?

Shifts start at 06:00 and 18:00 (the SOP text); alarm times are UTC and the sites keep their
shift clock in the same time base as the alarm. No data is needed: the answer is the clock.
"""

from sopgraph.graphs.model import Verdict
from sopgraph.tools.kit import instant

# Shift starts as the SOP states them, in minutes after midnight; shifts are 12 hours long.
_FIRST_SHIFT_MIN = 6 * 60
_SHIFT_MIN = 12 * 60


async def run(input: dict, ctx) -> Verdict:
    timestamp = input["timestamp"]
    grace = ctx.params["shift_change_grace_min"]
    t = instant(timestamp)
    minute_of_day = t.hour * 60 + t.minute + t.second / 60
    into_shift = (minute_of_day - _FIRST_SHIFT_MIN) % _SHIFT_MIN
    within = into_shift < grace
    return Verdict(
        value="true" if within else "false",
        observed={"minutes_into_shift": round(into_shift, 4)},
        threshold=grace,
        explanation=(
            f"The alarm is {into_shift:.0f} minutes into the shift "
            f"({'within' if within else 'past'} the first {grace} minutes)."
        ),
    )
