"""Python controllers the tests name (``pycc_examples:Name``)."""

from lowlat.controller import Controller


class Raises(Controller):
    def __init__(self):
        self.n = 0

    def on_feedback(self, report):
        self.n += 1
        if self.n == 20:
            raise ZeroDivisionError("the user's bug")

    def target_bitrate(self):
        return 500_000.0


class Nan(Controller):
    def on_feedback(self, report):
        pass

    def target_bitrate(self):
        return float("nan")


class Records(Controller):
    """Checks what a report carries against what the simulator promises."""

    seen = []

    def on_feedback(self, report):
        pkts = report.packets
        assert pkts and all(p.send_time_s <= report.now_s for p in pkts)
        assert [p.seq for p in pkts] == sorted(p.seq for p in pkts)
        assert all(p.arrival_time_s is None or p.arrival_time_s >= p.send_time_s for p in pkts)
        Records.seen.append((report.now_s, len(pkts), report.rtt_s()))

    def target_bitrate(self):
        return 700_000.0
