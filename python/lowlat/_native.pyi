"""Type stubs of the native core (``lowlat._native``, built from crates/lowlat-py)."""

from typing import Any, Callable

#: A result column: a list, a non-empty numeric column as ``(dtype, little-endian bytes)``
#: (``"<f8"`` or ``"<i8"``) for ``numpy.frombuffer``, or a non-empty label column as
#: ``("labels", distinct values, little-endian u32 indices into them)``.
Column = list[object] | tuple[str, bytes] | tuple[str, list[str], bytes]

class ScenarioError(ValueError):
    """A scenario that failed validation (one line: file, key, what was expected)."""

def validate(
    text: str, format: str, label: str, base_dir: str, memory_budget: str | None = None
) -> tuple[str, str, list[str]]: ...
def estimate(text: str, format: str, label: str, base_dir: str) -> tuple[int, int]: ...
def bench_dumbbell(rate_bps: int, duration_s: float, flow: str = "cbr") -> tuple[str, float, int, float, int]: ...
def controllers() -> list[str]: ...
def window_controllers() -> list[str]: ...
def queue_variants() -> list[str]: ...
def version() -> str: ...
def decoder_replay(complete_s: list[float], newest_s: list[float], discard_frames: int) -> tuple[list[float], list[bool]]: ...

class EmulatorError(ScenarioError): ...

def emulate(
    text: str,
    format: str,
    label: str,
    base_dir: str,
    listen: str,
    forward: str,
    duration_s: float | None = None,
    flow: str | None = None,
    pcap: str | None = None,
    max_datagram: int = 65_507,
    overhead: int = 0,
    max_clients: int = 64,
) -> tuple[str, dict[str, Any], dict[str, Any]]: ...
def bench_relay(seconds: float, shaped_bps: int) -> dict[str, float]: ...
def rtp_send(
    text: str,
    format: str,
    label: str,
    base_dir: str,
    dest: str,
    bind: str = "0.0.0.0:0",
    flow: str | None = None,
    duration_s: float | None = None,
    cc: str | None = None,
) -> tuple[str, dict[str, Any], dict[str, Any]]: ...
def rtp_receive(
    text: str, format: str, label: str, base_dir: str, listen: str, flow: str | None = None, duration_s: float | None = None
) -> tuple[str, dict[str, Any], dict[str, Any]]: ...

class Simulation:
    def __init__(
        self,
        text: str,
        format: str,
        label: str,
        base_dir: str,
        seed: int | None = None,
        cc: str | None = None,
        queue: str | None = None,
        rtt_s: float | None = None,
        jitter_s: float | None = None,
        memory_budget: str | None = None,
    ) -> None: ...
    def advance(self, until_s: float) -> None: ...
    def bottleneck_departure_s(self, text: str, format: str, label: str, base_dir: str) -> float | None: ...
    def switch_bottleneck(self, text: str, format: str, label: str, base_dir: str) -> None: ...
    def plan_tables(
        self,
        predictions: bool = True,
        sender_rtt: bool = True,
        series: bool = True,
        frames: bool = True,
        links: bool = True,
        prediction_sample: int | None = None,
    ) -> None: ...
    def capture_pcap(self) -> None: ...
    def take_pcap(self) -> bytes | None: ...
    def now_s(self) -> float: ...
    def end_s(self) -> float: ...
    def events(self) -> int: ...
    def name(self) -> str: ...
    def seed(self) -> int: ...
    def external_controllers(self) -> list[tuple[str, str]]: ...
    def set_controller(self, flow: str, callback: object) -> None: ...
    def set_target(self, flow: str, bps: float) -> float: ...
    def take_window(self, flow: str, calls: int = 1) -> tuple[int, int, int, int, float, float, float, float, float]: ...
    def controller_error(self) -> str | None: ...
    def finish(
        self, predictions: bool = True, sender_rtt: bool = True, series: bool = True, frames: bool = True
    ) -> tuple[
        str,
        dict[str, Column],
        dict[str, Column],
        dict[str, Column],
        dict[str, Column],
        dict[str, Column],
    ]: ...
def shell_pump(
    text: str, format: str, label: str, base_dir: str, netns: str, inside_tun: str, host_tun: str,
    inside_addr: str, host_addr: str, ready: Callable[[], None], should_stop: Callable[[], bool],
    pcap: str | None = None,
) -> str: ...
