"""A tiny delay-gradient congestion controller in Python (docs/python-controllers.md).

It follows the idea of GCC's delay-based estimator in a dozen lines: over each feedback report
it fits the one-way delay against arrival time and smooths that slope (jitter makes one report's
slope noisy, as GCC's trendline filter smooths it); when the smoothed delay grows faster than a
threshold (queues are building) it cuts the rate by a factor, otherwise it adds a constant; a
loss cuts too. The constants are illustrative, not from a standard.

Run it: ``lowlat run rmcat-5.1 --cc lowlat.examples.delay_gradient:DelayGradient,gcc``.
"""

from __future__ import annotations

from lowlat.controller import Controller, FeedbackReport


class DelayGradient(Controller):
    """Additive increase while the delay is flat, multiplicative decrease while it grows."""

    #: Delay growth (seconds per second) above which the queue is taken to be building.
    THRESHOLD = 0.01
    #: Cut factor when it is.
    DECREASE = 0.85
    #: Added per report (bit/s) otherwise.
    INCREASE_BPS = 15_000.0

    #: Weight of the newest report's slope in the smoothed one.
    SMOOTHING = 0.1

    def __init__(self) -> None:
        self.rate_bps = 300_000.0
        self.trend = 0.0

    def on_feedback(self, report: FeedbackReport) -> None:
        self.trend += self.SMOOTHING * (report.delay_gradient() - self.trend)
        if self.trend > self.THRESHOLD or report.lost() > 0:
            self.rate_bps *= self.DECREASE
        else:
            self.rate_bps += self.INCREASE_BPS
        # The simulator clamps the target to the flow's rmin..rmax; keep the state there too.
        self.rate_bps = min(max(self.rate_bps, 50_000.0), 10_000_000.0)

    def target_bitrate(self) -> float:
        return self.rate_bps
