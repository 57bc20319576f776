"""A Gymnasium environment for learned bandwidth estimation (``pip install 'lowlat[gym]'``).

The setup of OpenNetLab's gym (AlphaRTC's bandwidth-estimation challenge), on lowlat's virtual
time: an **episode** is one scenario (a capacity trace, an RTT, a queue); a **step** is one
interval of virtual time (default 50 ms, the feedback interval of the challenge); the **action**
is the target bitrate of the video flow's encoder (bit/s, clamped to the flow's rmin..rmax); the
**observation** is what a receiver-side estimator sees over a window of the last
``window_steps`` steps (default 4: 200 ms), from the transport-wide feedback reports that arrived
in it::

    [receive rate (Mbit/s), mean one-way delay (s), delay gradient (s/s), loss ratio]

(the delay gradient is the least-squares slope of one-way delay against arrival time over the
window's packets; a window without a report repeats the previous observation: the estimator
learnt nothing new).
The **reward** is configurable; the default is the usual throughput - delay - loss mix::

    reward = receive rate (Mbit/s) - 10 x queueing delay (s) - 10 x loss ratio

where the queueing delay is the mean one-way delay minus the smallest seen in the episode (so a
long path is not punished, a standing queue is). Pass ``reward=f`` with ``f(obs, info) -> float``
to change it; ``info`` holds the same values by name and the step's virtual time.

Episodes: by default each is generated from the episode's seed: capacity steps every 5 s drawn
from 0.3-4 Mbit/s, a one-way delay of 10-100 ms, a drop-tail queue of 100-500 ms, 30 s long. Or
pass ``scenarios=[...]`` (catalog names, files or dicts with one rtp-video flow): ``reset``
draws one, and its video flow runs under the external controller. ``reset(seed=s)`` makes the
episode reproducible: the same seed gives the same scenario and the same observations for the
same actions.

>>> from lowlat.gym import LowlatEnv
>>> env = LowlatEnv()
>>> obs, info = env.reset(seed=1)
>>> obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("lowlat.gym needs gymnasium: pip install 'lowlat[gym]'") from e

from . import _native
from .catalog import resolve

#: Names of the observation's entries.
OBSERVATION = ("receive_rate_mbps", "delay_s", "delay_gradient", "loss_ratio")


def default_reward(obs: np.ndarray, info: Mapping[str, Any]) -> float:
    """receive rate (Mbit/s) - 10 x queueing delay (s) - 10 x loss ratio."""
    return float(obs[0] - 10.0 * info["queueing_delay_s"] - 10.0 * obs[3])


def generated_scenario(rng: np.random.Generator, duration_s: float = 30.0) -> dict[str, Any]:
    """An episode drawn from ``rng``: capacity steps every 5 s in 0.3-4 Mbit/s, a one-way delay
    of 10-100 ms, a drop-tail queue of 100-500 ms, one video flow under the external controller."""
    steps = [
        {"at": f"{t} s", "rate": f"{int(rng.uniform(300, 4000))} kbit/s"} for t in range(0, int(duration_s), 5)
    ]
    delay_ms = int(rng.uniform(10, 100))
    return {
        "name": "gym-episode",
        "duration": f"{duration_s} s",
        "bottleneck": {
            "schedule": steps,
            "delay": f"{delay_ms} ms",
            "queue": {"kind": "droptail", "limit": f"{int(rng.uniform(100, 500))} ms"},
        },
        "reverse": {"rate": "10 Mbit/s", "delay": f"{delay_ms} ms"},
        "flows": [{"id": "video", "kind": "rtp-video", "cc": "external", "rmin": "50 kbit/s", "rmax": "6 Mbit/s"}],
    }


class LowlatEnv(gymnasium.Env):  # type: ignore[misc,unused-ignore]
    """Bandwidth estimation on lowlat's simulator (see the module's documentation)."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        scenarios: Sequence[str | Mapping[str, Any]] | None = None,
        *,
        step_ms: float = 50.0,
        reward: Callable[[np.ndarray, Mapping[str, Any]], float] | None = None,
        min_rate_bps: float = 50_000.0,
        max_rate_bps: float = 6_000_000.0,
        episode_s: float = 30.0,
        window_steps: int = 4,
    ) -> None:
        if not (math.isfinite(step_ms) and step_ms > 0):
            raise ValueError(f"step_ms: got {step_ms}, expected a positive number of milliseconds")
        if not (0 < min_rate_bps < max_rate_bps and math.isfinite(max_rate_bps)):
            raise ValueError(f"min_rate_bps, max_rate_bps: got {min_rate_bps}, {max_rate_bps}, expected 0 < min < max")
        if not (isinstance(window_steps, int) and window_steps >= 1):
            raise ValueError(f"window_steps: got {window_steps!r}, expected a whole number of at least 1")
        self.window_steps = window_steps
        self._steps = 0
        self.scenarios = list(scenarios) if scenarios else None
        self.step_s = step_ms / 1000.0
        self.reward_fn = reward or default_reward
        self.episode_s = episode_s
        self.action_space = spaces.Box(np.float32(min_rate_bps), np.float32(max_rate_bps), shape=(1,), dtype=np.float32)
        self.observation_space = spaces.Box(
            low=np.array([0.0, 0.0, -np.inf, 0.0], dtype=np.float32),
            high=np.array([np.inf, np.inf, np.inf, 1.0], dtype=np.float32),
            dtype=np.float32,
        )
        self._sim: Any = None
        self._flow = ""
        self._obs = np.zeros(4, dtype=np.float32)
        self._min_delay = math.inf

    def _scenario(self) -> Any:
        if self.scenarios is None:
            doc = generated_scenario(self.np_random, self.episode_s)
            return resolve(doc)
        pick = self.scenarios[int(self.np_random.integers(len(self.scenarios)))]
        return resolve(pick)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        src = self._scenario()
        sim_seed = int(self.np_random.integers(2**63))
        self._sim = _native.Simulation(src.text, src.format, src.label, src.base_dir, sim_seed, "external")
        ext = self._sim.external_controllers()
        if not ext:
            raise ValueError(f"{src.label}: no rtp-video flow to control")
        self._flow = ext[0][0]
        self._obs = np.zeros(4, dtype=np.float32)
        self._min_delay = math.inf
        self._steps = 0
        return self._obs.copy(), {"scenario": self._sim.name(), "t_s": 0.0}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._sim is None:
            raise RuntimeError("call reset() before step()")
        bps = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
        if not math.isfinite(bps):
            raise ValueError(f"action: got {bps}, expected a finite bitrate in bit/s")
        target = self._sim.set_target(self._flow, bps)
        t = min(self._sim.now_s() + self.step_s, self._sim.end_s())
        self._sim.advance(t)
        window = self._sim.take_window(self._flow, self.window_steps)
        reports, received, lost, nbytes, mean_delay, min_delay, _, gradient, loss = window
        self._steps += 1
        if reports:
            self._min_delay = min(self._min_delay, min_delay) if received else self._min_delay
            span_s = min(self._steps, self.window_steps) * self.step_s
            self._obs = np.array([nbytes * 8e-6 / span_s, mean_delay, gradient, loss], dtype=np.float32)
        queueing = max(0.0, float(self._obs[1]) - self._min_delay) if math.isfinite(self._min_delay) else 0.0
        info = {
            "t_s": t,
            "target_bps": target,
            "reports": reports,
            "queueing_delay_s": queueing,
            **{k: float(v) for k, v in zip(OBSERVATION, self._obs)},
        }
        reward = float(self.reward_fn(self._obs, info))
        terminated = t >= self._sim.end_s()
        return self._obs.copy(), reward, terminated, False, info

    def close(self) -> None:
        self._sim = None


def steps_per_second(steps: int = 20_000, step_ms: float = 50.0, seed: int = 1) -> dict[str, Any]:
    """Times ``steps`` environment steps of ``step_ms`` with a constant action (episodes reset as
    they end): the figure ``lowlat bench`` reports."""
    import time

    env = LowlatEnv(step_ms=step_ms, episode_s=60.0)
    env.reset(seed=seed)
    action = np.array([1_000_000.0], dtype=np.float32)
    started = time.perf_counter()
    resets = 0
    for _ in range(steps):
        _, _, terminated, _, _ = env.step(action)
        if terminated:
            env.reset()
            resets += 1
    wall = time.perf_counter() - started
    return {"case": f"gym/{step_ms:g}ms", "steps": steps, "wall_s": wall, "steps_per_s": steps / wall,
            "sim_s_per_wall_s": steps * step_ms / 1000.0 / wall, "episodes": resets + 1}
