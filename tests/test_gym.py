"""lowlat.gym: gymnasium's checker passes, an episode is reproducible from its seed, the action is
the rate the flow gets, the reward is configurable."""

import warnings

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'lowlat[gym]')")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from lowlat.gym import LowlatEnv  # noqa: E402


def rollout(env, seed, actions):
    obs, _ = env.reset(seed=seed)
    out = [obs]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(np.array([a], dtype=np.float32))
        out.append(np.append(obs, reward))
        if terminated:
            break
    return np.concatenate(out)


def test_check_env_passes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its advice (normalised boxes), not failures
        check_env(LowlatEnv(episode_s=5.0), skip_render_check=True)


def test_an_episode_is_reproducible_from_its_seed():
    actions = np.random.default_rng(0).uniform(1e5, 3e6, 200)
    a = rollout(LowlatEnv(), 42, actions)
    b = rollout(LowlatEnv(), 42, actions)
    c = rollout(LowlatEnv(), 43, actions)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_the_action_is_the_rate_and_episodes_end():
    env = LowlatEnv(["rmcat-5.1"], step_ms=100)
    env.reset(seed=1)
    rates, losses, steps = [], [], 0
    terminated = False
    while not terminated:
        obs, reward, terminated, truncated, info = env.step(np.array([500_000.0], dtype=np.float32))
        steps += 1
        if 10 < info["t_s"] < 39 and info["reports"]:
            rates.append(obs[0])
            losses.append(obs[3])
    assert steps == 1000  # 100 s of 100 ms steps
    # 500 kbit/s of video through 1 Mbit/s: received at about that rate (frame sizes vary), no loss.
    assert 0.4 < np.mean(rates) < 0.6 and max(losses) == 0.0, np.mean(rates)


def test_the_reward_is_configurable():
    env = LowlatEnv(reward=lambda obs, info: -info["queueing_delay_s"])
    env.reset(seed=5)
    for _ in range(100):
        _, reward, _, _, info = env.step(np.array([5e6], dtype=np.float32))
    assert reward == -info["queueing_delay_s"] and reward < 0  # 5 Mbit/s fills every generated link


def test_the_window_spans_several_steps():
    # 100 ms feedback, 50 ms steps: a one-step window is empty every other step, a four-step one
    # always holds two reports; both see the same delays at steady state.
    one, four = LowlatEnv(["rmcat-5.1"], window_steps=1), LowlatEnv(["rmcat-5.1"], window_steps=4)
    one.reset(seed=2)
    four.reset(seed=2)
    reports = {1: [], 4: []}
    for _ in range(300):
        for k, env in ((1, one), (4, four)):
            _, _, _, _, info = env.step(np.array([400_000.0], dtype=np.float32))
            reports[k].append(info["reports"])
    assert 0 in reports[1][100:] and min(reports[4][100:]) >= 2
    with pytest.raises(ValueError, match="window_steps"):
        LowlatEnv(window_steps=0)
