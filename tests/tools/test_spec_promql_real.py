"""The series measure's counter and histogram forms on a real Prometheus: ``rate``,
``increase`` (a counter reset inside the window), ``sum by`` the input's labels and
``histogram_quantile`` over bucket rates, each read through prometheus-mcp-server from a TSDB
that promtool backfilled from a hand-written OpenMetrics file. The expected numbers are
worked out below from the samples and PromQL's extrapolation rule, not read back."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest

from sopgraph.evals.world_real_stack import PrometheusProcess, mcp_server_command
from sopgraph.mcp_servers.prometheus_backfill import _promtool
from sopgraph.nodes.mcp import McpPool, ServerConfig
from sopgraph.tools.spec.model import Check, SeriesMeasure, SpecError
from sopgraph.tools.spec.series import query_text, read

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (shutil.which("prometheus") and shutil.which("promtool")),
        reason="Prometheus is not installed: apt-get install prometheus (make system-deps)",
    ),
]
T0 = 1_740_787_200  # 2025-03-01T00:00:00Z
AT = "2025-03-01T00:30:00Z"  # the input's time: 30 one-minute samples after T0
STEP = 60


def _openmetrics() -> str:
    lines = ["# TYPE jobs_done counter"]
    for station in ("S1", "S2"):
        for i in range(31):
            # +10 a minute; S1 resets at minute 25 (its process restarted) and goes on from 10
            value = 10 * (i - 24) if station == "S1" and i >= 25 else 10 * i
            lines.append(f'jobs_done_total{{site="A",station="{station}"}} {value} {T0 + i * STEP}')
    lines.append("# TYPE req_seconds histogram")
    buckets = {"0.1": 50, "0.5": 90, "+Inf": 100}  # requests a minute at or under each bound
    for i in range(31):
        for le, per_minute in buckets.items():
            lines.append(
                f'req_seconds_bucket{{site="A",le="{le}"}} {per_minute * i} {T0 + i * STEP}'
            )
        lines.append(f'req_seconds_count{{site="A"}} {100 * i} {T0 + i * STEP}')
        lines.append(f'req_seconds_sum{{site="A"}} {20 * i} {T0 + i * STEP}')
    return "\n".join([*lines, "# EOF", ""])


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory):
    work = tmp_path_factory.mktemp("promql_real")
    text, blocks = work / "samples.om", work / "blocks"
    text.write_text(_openmetrics())
    blocks.mkdir()
    assert _promtool(shutil.which("promtool"), text, blocks) is None
    with PrometheusProcess(blocks, work) as prom:
        env = {"PROMETHEUS_URL": prom.url, "PROMETHEUS_DISABLE_LINKS": "true"}
        config = ServerConfig(command=str(mcp_server_command()), env=env)
        yield McpPool({"prom": config})


async def _value(pool: McpPool, **fields) -> tuple[float | None, str]:
    m = SeriesMeasure(server="prom", match={"site": "$site"}, minutes=15, **fields)
    return await read(m, {"site": "A"}, AT, SimpleNamespace(mcp=pool, params={}))


async def test_rate_and_increase_are_prometheus_own_through_a_reset(pool):
    async with pool:
        # the window (00:15:00.001, 00:30:00.001] holds 15 samples a series, 14 steps of +10
        # (S1's reset at minute 25 counts its new value, 10); PromQL extrapolates 140 over the
        # sampled 14 minutes to the window's 15: 150 a series, 1/6 a second
        rate, query = await _value(pool, metric="jobs_done_total", reduce="rate", across="max")
        assert query == 'rate(jobs_done_total{site="A"}[15m])'
        assert rate == pytest.approx(10 / 60, rel=1e-3)
        total, _ = await _value(pool, metric="jobs_done_total", reduce="increase")
        assert total == pytest.approx(2 * 150, rel=1e-3)  # across: the sum of the two series
        # the same samples as a gauge: the reset shows as a drop, not as work done
        last, _ = await _value(pool, metric="jobs_done_total", reduce="last", across="min")
        assert last == 60  # S1 after its reset: 10 * (30 - 24)


async def test_sum_by_aggregates_in_promql_before_across(pool):
    async with pool:
        value, query = await _value(
            pool, metric="jobs_done_total", reduce="rate", sum_by=("site",), across="count"
        )
        assert query == 'sum by (site) (rate(jobs_done_total{site="A"}[15m]))'
        assert value == 1  # one site group left, where there were two station series
        summed, _ = await _value(pool, metric="jobs_done_total", reduce="rate", sum_by=("site",))
        assert summed == pytest.approx(2 * 10 / 60, rel=1e-3)


async def test_histogram_quantile_over_bucket_rates(pool):
    async with pool:
        # a minute's 100 requests: 50 at or under 0.1 s, 40 more under 0.5 s, 10 above; the
        # 0.7 quantile (rank 70) lies halfway through the (0.1, 0.5] bucket: 0.3 s
        p70, query = await _value(pool, metric="req_seconds", reduce="rate", quantile=0.7)
        assert query == (
            'histogram_quantile(0.7, sum by (le) (rate(req_seconds_bucket{site="A"}[15m])))'
        )
        assert p70 == pytest.approx(0.3, rel=1e-6)
        p50, _ = await _value(pool, metric="req_seconds", reduce="rate", quantile=0.5)
        assert p50 == pytest.approx(0.1, rel=1e-6)
    check = Check.model_validate(
        {
            "measures": {"p": {"server": "prom", "metric": "req_seconds", "minutes": 15,
                               "reduce": "rate", "quantile": 0.99, "match": {"site": "$site"}}},
            "value": "p", "op": ">", "threshold": 1, "missing": "no_data",
        }
    )  # fmt: skip
    assert query_text(check.measures["p"], {"site": "B"}).startswith("histogram_quantile(0.99,")


def test_a_quantile_without_bucket_rates_or_a_bad_label_is_refused():
    with pytest.raises((ValueError, SpecError), match="give reduce rate"):
        SeriesMeasure(server="p", metric="req_seconds", quantile=0.9)
    with pytest.raises((ValueError, SpecError), match="not a label to sum by"):
        SeriesMeasure(server="p", metric="x", sum_by=("site)",))
    with pytest.raises((ValueError, SpecError), match="from 0 to 1"):
        SeriesMeasure(server="p", metric="x", reduce="rate", quantile=99)
