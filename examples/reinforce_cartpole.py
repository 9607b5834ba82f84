"""REINFORCE (the policy-gradient method) on CartPole: a small policy network learns to keep a
pole upright on a moving cart; the average return rises as it learns.

    python examples/reinforce_cartpole.py --episodes 300

The environment is gymnasium's CartPole-v1 when gymnasium is installed, otherwise the same
classic cart-pole dynamics (Barto, Sutton & Anderson, 1983) simulated here in a few lines, so
the example needs nothing beyond torchlite and NumPy.
"""
import argparse
import math

import numpy as np

import torchlite as torch
from torchlite.distributions import Categorical
from torchlite import nn


class CartPole:
    """Cart-pole with gymnasium's constants: Euler steps of 0.02 s, push +-10 N, the episode
    ends when the pole leans over 12 degrees, the cart leaves +-2.4 m, or after 500 steps."""

    gravity, cart_mass, pole_mass, half_length, force, dt = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    max_steps = 500

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, 4)
        self.steps = 0
        return self.state.astype(np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        f = self.force if action == 1 else -self.force
        total = self.cart_mass + self.pole_mass
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (f + self.pole_mass * self.half_length * theta_dot ** 2 * sin) / total
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.half_length * (4.0 / 3.0 - self.pole_mass * cos ** 2 / total))
        x_acc = temp - self.pole_mass * self.half_length * theta_acc * cos / total
        self.state = np.array([x + self.dt * x_dot, x_dot + self.dt * x_acc,
                               theta + self.dt * theta_dot, theta_dot + self.dt * theta_acc])
        self.steps += 1
        fallen = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * math.pi / 180
        return self.state.astype(np.float32), 1.0, fallen, self.steps >= self.max_steps


def make_env(seed):
    """gymnasium's CartPole-v1 if installed, else the simulation above (same interface)."""
    try:
        import gymnasium
    except ImportError:
        return CartPole(seed), "built-in cart-pole simulation"
    env = gymnasium.make("CartPole-v1")

    class Wrapped:
        seed_next_reset = seed      # seed the first episode only: later ones start elsewhere

        def reset(self):
            obs = env.reset(seed=self.seed_next_reset)[0]
            self.seed_next_reset = None
            return obs.astype(np.float32)

        def step(self, action):
            obs, reward, terminated, truncated, _ = env.step(action)
            return obs.astype(np.float32), reward, terminated, truncated
    return Wrapped(), "gymnasium CartPole-v1"


def run_episode(env, policy, device):
    """Play one episode with actions sampled from the policy: (log-probabilities, rewards)."""
    obs, log_probs, rewards = env.reset(), [], []
    while True:
        logits = policy(torch.from_numpy(obs).to(device))
        dist = Categorical(logits=logits)        # torch.distributions' REINFORCE idiom
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        action = action.item()
        obs, reward, terminated, truncated = env.step(action)
        rewards.append(reward)
        if terminated or truncated:
            return log_probs, rewards


def discounted_returns(rewards, gamma):
    """G_t = r_t + gamma G_(t+1), standardised (a baseline that keeps the gradient's scale)."""
    g, out = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        out.append(g)
    returns = torch.tensor(out[::-1])
    return (returns - returns.mean()) / (returns.std() + 1e-8) if len(out) > 1 else returns * 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", "--steps", dest="episodes", type=int, default=300,
                        help="episodes to train (--steps is the same flag)")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the policy's device)")
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    env, name = make_env(args.seed)
    print(f"environment: {name}")
    policy = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 2)).to(args.device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=args.lr)
    lengths, window = [], max(1, args.episodes // 10)
    for episode in range(args.episodes):
        log_probs, rewards = run_episode(env, policy, args.device)
        returns = discounted_returns(rewards, args.gamma).to(args.device)
        loss = -(torch.stack(log_probs) * returns).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lengths.append(sum(rewards))
        if (episode + 1) % window == 0:
            print(f"episodes {episode + 2 - window:4d}-{episode + 1:4d}  "
                  f"average return {np.mean(lengths[-window:]):6.1f}")
    first, last = np.mean(lengths[:window]), np.mean(lengths[-window:])
    print(f"average return: first {window} episodes {first:.1f}, last {window} episodes {last:.1f}")


if __name__ == "__main__":
    main()
