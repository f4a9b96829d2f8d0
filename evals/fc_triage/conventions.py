"""The labeler's unstated conventions as switches, each with a plausible wrong variant.

``Conventions()`` is the subject-matter expert's reading (``conventions.md``); a mutant turns
one switch off. ``MUTATIONS`` names, per switch, the wrong variant and the decision nodes
whose ground truth applies that convention (the nodes a tool can get wrong by it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import NamedTuple


@dataclass(frozen=True)
class Conventions:
    """Every switch True is the labeler as the expert means it."""

    window_end_inclusive: bool = True
    hour_floor: bool = True
    shift_grace_exclusive: bool = True
    robotics_percent: bool = True
    ratio_units: bool = True
    imbalance_points: bool = True
    flow_per_hour: bool = True
    rate_ratio_of_sums: bool = True
    zero_attempts_false: bool = True
    per_entity: bool = True
    quadrant_each: bool = True
    latest_reading: bool = True
    drop_over_previous: bool = True
    zero_previous_false: bool = True
    counter_cumulative: bool = True
    counter_resets: bool = True
    counter_prior_reading: bool = True
    missing_rows_no_data: bool = True
    nulls_skipped: bool = True
    silent_any_vs_all: bool = True
    silent_quadrant_skipped: bool = True
    at_least_inclusive: bool = True
    staffing_integers: bool = True
    service_age_exact: bool = True
    no_record_worn: bool = True
    downstage_start_inclusive: bool = True
    state_interval: bool = True
    ticket_at_time: bool = True
    faults_last_24h: bool = True

    def without(self, name: str) -> Conventions:
        """This reading with convention ``name`` replaced by its wrong variant."""
        return replace(self, **{name: False})


EXPERT = Conventions()

_ROBO_WINDOW = (
    "obs_station_idle rc_robot_telemetry_gap obs_idle_spread obs_pick_error_high "
    "ct_error_rate_critical obs_pick_error_spread rc_suction_cup_worn rc_camera_degraded "
    "obs_camera_fail_high obs_camera_fail_spread rc_label_defects obs_label_fail_high "
    "rc_label_stock_low obs_site_throughput_low ct_standby_capacity_safe"
)
_CONV_WINDOW = (
    "rc_upstream_blockage obs_upstream_flow_low rc_upstream_sensor_silent "
    "obs_starvation_sustained rc_upstream_jam rc_sorter_jam obs_sorter_jams "
    "ct_sorter_jam_persistent rc_sorter_throughput_low rc_recirc_high rc_chutes_full "
    "rc_quadrant_backed_up obs_belt_fill_high rc_belt_sensor_offline obs_belt_imbalance "
    "ct_downstage_precondition"
)
_JAMS = "rc_upstream_jam rc_sorter_jam obs_sorter_jams ct_sorter_jam_persistent"
_PICK = "obs_pick_error_high ct_error_rate_critical obs_pick_error_spread"


class Mutation(NamedTuple):
    """One convention, its wrong variant, and the nodes it governs."""

    section: str
    convention: str
    wrong: str
    nodes: tuple[str, ...]


def _m(section: str, convention: str, wrong: str, nodes: str) -> Mutation:
    return Mutation(section, convention, wrong, tuple(nodes.split()))


MUTATIONS: dict[str, Mutation] = {
    "window_end_inclusive": _m(
        "Time",
        "window (T-N, T]",
        "window [T-N, T) (end exclusive)",
        f"{_ROBO_WINDOW} {_CONV_WINDOW}",
    ),
    "hour_floor": _m(
        "Time",
        "this hour = T floored to the hour",
        "T rounded to the nearest hour",
        "rc_pack_out_understaffed ct_labor_pool_available",
    ),
    "shift_grace_exclusive": _m(
        "Time",
        "0 <= minutes into shift < N",
        "0 <= minutes into shift <= N",
        "ct_shift_change_window",
    ),
    "robotics_percent": _m(
        "Units",
        "robotics percentages are 0-100",
        "read as fractions 0-1 (threshold / 100)",
        "obs_station_idle obs_idle_spread rc_camera_degraded obs_camera_fail_high "
        "obs_camera_fail_spread rc_label_defects obs_label_fail_high rc_label_stock_low",
    ),
    "ratio_units": _m(
        "Units",
        "conveyance ratios 0-1 vs pct / 100",
        "ratio compared with the percent itself",
        "rc_upstream_blockage obs_upstream_flow_low obs_starvation_sustained "
        "rc_sorter_throughput_low rc_recirc_high rc_quadrant_backed_up obs_belt_fill_high "
        "ct_downstage_precondition",
    ),
    "imbalance_points": _m(
        "Units",
        "imbalance = |north - south| * 100 points",
        "relative gap |n - s| / max(n, s)",
        "obs_belt_imbalance",
    ),
    "flow_per_hour": _m(
        "Units",
        "flow = units summed over 60 min (per hour)",
        "flow = units per 5-minute sample",
        "ct_standby_capacity_safe",
    ),
    "rate_ratio_of_sums": _m(
        "Aggregation",
        "rate = sum(errors) / sum(attempts)",
        "mean of per-interval pick_error_pct",
        _PICK,
    ),
    "zero_attempts_false": _m(
        "Aggregation",
        "zero attempts in the window: false",
        "zero attempts: no_data",
        "obs_pick_error_high ct_error_rate_critical",
    ),
    "per_entity": _m(
        "Aggregation",
        "count stations over the threshold",
        "site-wide average over the threshold",
        "obs_idle_spread obs_camera_fail_spread obs_pick_error_spread",
    ),
    "quadrant_each": _m(
        "Aggregation",
        "any quadrant's mean above",
        "the whole belt's mean above",
        "obs_belt_fill_high",
    ),
    "latest_reading": _m(
        "Aggregation",
        "latest non-null reading",
        "mean of the window",
        "rc_label_stock_low rc_chutes_full",
    ),
    "drop_over_previous": _m(
        "Aggregation",
        "drop relative to the previous hour",
        "drop relative to the last hour",
        "obs_site_throughput_low",
    ),
    "zero_previous_false": _m(
        "Aggregation",
        "previous hour without units: false",
        "previous hour without units: no_data",
        "obs_site_throughput_low",
    ),
    "counter_cumulative": _m(
        "Counters", "jam counters are cumulative", "readings summed as events per interval", _JAMS
    ),
    "counter_resets": _m(
        "Counters",
        "a drop is a restart: count the reading",
        "no reset handling (last - first)",
        _JAMS,
    ),
    "counter_prior_reading": _m(
        "Counters",
        "first increment uses the reading before the window",
        "only readings inside the window",
        _JAMS,
    ),
    "missing_rows_no_data": _m(
        "Missing data",
        "no robotics rows in the window: no_data",
        "no rows: false",
        "obs_station_idle obs_idle_spread obs_pick_error_high ct_error_rate_critical "
        "obs_pick_error_spread rc_suction_cup_worn rc_camera_degraded obs_camera_fail_high "
        "obs_camera_fail_spread rc_label_defects obs_label_fail_high rc_label_stock_low "
        "obs_site_throughput_low ct_standby_capacity_safe",
    ),
    "nulls_skipped": _m(
        "Missing data",
        "means skip NULL readings",
        "NULL read as 0 (COALESCE)",
        "rc_upstream_blockage obs_upstream_flow_low obs_starvation_sustained "
        "rc_quadrant_backed_up obs_belt_fill_high obs_belt_imbalance",
    ),
    "silent_any_vs_all": _m(
        "Missing data",
        "stopped reporting = any NULL; reported nothing = all NULL",
        "the two swapped",
        "rc_belt_sensor_offline rc_upstream_sensor_silent",
    ),
    "silent_quadrant_skipped": _m(
        "Missing data",
        "a silent quadrant is skipped",
        "any silent quadrant: no_data",
        "obs_belt_fill_high obs_belt_imbalance",
    ),
    "at_least_inclusive": _m(
        "Boundaries",
        "at least = >=",
        "at least read as >",
        "rc_upstream_jam rc_sorter_jam obs_sorter_jams rc_chutes_full rc_stations_down "
        "ct_labor_pool_available ct_repeat_robot_faults obs_idle_spread obs_camera_fail_spread "
        "obs_pick_error_spread",
    ),
    "staffing_integers": _m(
        "Boundaries",
        "present * 100 < planned * pct",
        "present < planned * pct // 100",
        "rc_pack_out_understaffed",
    ),
    "service_age_exact": _m(
        "Boundaries",
        "age = T - event, exact",
        "age in calendar days / clock hours",
        "ct_cup_recently_replaced ct_lens_cleaned_recently rc_print_head_worn",
    ),
    "no_record_worn": _m(
        "Boundaries", "no replacement on record: worn", "no record: not worn", "rc_print_head_worn"
    ),
    "downstage_start_inclusive": _m(
        "Boundaries",
        "readings in [T - 10, T] (start inclusive)",
        "readings in (T - 10, T]",
        "ct_downstage_precondition",
    ),
    "state_interval": _m(
        "Ops semantics",
        "state at T: started_at <= T < ended_at",
        "started_at < T <= ended_at",
        "rc_robot_fault rc_printer_fault rc_stations_down ct_standby_capacity_safe",
    ),
    "ticket_at_time": _m(
        "Ops semantics",
        "open at T from opened_at / closed_at",
        "filtered on export-time status",
        "ct_robot_ticket_open ct_printer_ticket_open ct_escalation_open",
    ),
    "faults_last_24h": _m(
        "Ops semantics",
        "faults started in (T - 24 h, T]",
        "faults started since midnight UTC",
        "ct_repeat_robot_faults",
    ),
}

assert set(MUTATIONS) == {f.name for f in fields(Conventions)}


def governing(node_id: str) -> list[str]:
    """The conventions whose wrong variant can change ``node_id``'s ground truth."""
    return [name for name, m in MUTATIONS.items() if node_id in m.nodes]
