"""The OTLP/HTTP span exporter behind ``--trace otlp``, made to fail quietly and fast.

The SDK's exporter retries a batch with back-off for its whole timeout (10 s) and logs every
retry, so a run traced to a collector nobody started printed a page of retry logs and took
three times as long. Here each batch first asks whether anything listens at the collector's
address (a TCP connect, at most ``PROBE_TIMEOUT_S``): when nothing does, the batch is dropped,
one warning line says so (once per process), and the address is not asked again for
``RETRY_AFTER_S``. A collector that listens gets every batch through the SDK's exporter as
before, its retries included (an HTTP error from a live collector is worth its logs).
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Sequence
from typing import TextIO
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

PROBE_TIMEOUT_S = 0.5
RETRY_AFTER_S = 30.0


class CollectorExporter(SpanExporter):
    """``OTLPSpanExporter`` (configured by the standard ``OTEL_EXPORTER_OTLP_*`` variables) that
    drops batches while no collector listens, with one warning line on ``stream``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._inner = OTLPSpanExporter()
        self.endpoint: str = self._inner._endpoint  # resolved from the variables by the SDK
        self._stream = stream
        self._down_until = 0.0
        self._warned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._down_until:
            return SpanExportResult.FAILURE
        problem = self._unreachable()
        if problem is None:
            return self._inner.export(spans)
        self._down_until = time.monotonic() + RETRY_AFTER_S
        if not self._warned:
            self._warned = True
            print(
                f"warning: no OTLP collector at {self.endpoint} ({problem}); traces are dropped "
                "until one listens (start one, e.g. `make phoenix` in a checkout, or set "
                "OTEL_EXPORTER_OTLP_ENDPOINT)",
                file=self._stream or sys.stderr,
                flush=True,
            )
        return SpanExportResult.FAILURE

    def _unreachable(self) -> str | None:
        """Why nothing listens at the endpoint's host and port, or None when something does."""
        url = urlsplit(self.endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            with socket.create_connection((url.hostname or "localhost", port), PROBE_TIMEOUT_S):
                return None
        except OSError as exc:
            return exc.strerror or type(exc).__name__

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._inner.shutdown()
