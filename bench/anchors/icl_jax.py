"""The JAX anchor of the ICL benchmark: von Oswald et al.'s in-context regression run, written plainly in JAX.

Our own re-implementation of the protocol that ``probes/icl_gd/`` trains (its full ``Config``): tasks with
x ~ U(-1/2, 1/2)^d (context and query), w ~ N(0, I_d), y = w.x (no noise); tokens (x_i, y_i) and the query
(x_q, 0) last; one linear self-attention layer (one head of width d + 1, unit logit scale, no norm, MLP or
read-out, residual kept) whose keys are the N context tokens only; prediction = minus the query's last
output coordinate; loss 0.5 * mean squared error; weights N(0, 0.02^2) with the output projection divided
by sqrt(2) (GPT-2 init, as the zoo draws them); Adam (betas 0.9, 0.999, eps 1e-8, no weight decay, no
clipping) with the learning rate decayed by a cosine from ``lr`` to ``0.1 lr`` over the run, a fresh batch
of tasks every update. The forward pass is the ordinary one (every token's q, k, v, the (B, T, T) pattern,
the whole output): this is what a researcher writes in JAX, jit-compiled one update at a time, with
XLA's default threads. The random streams differ from ours (threefry against torch's Mersenne twister),
so the losses match in law, not in value.

``python bench/anchors/icl_jax.py --steps 200`` prints one JSON object. It is a benchmark, not a test
dependency: jax is the optional extra ``anchors`` (``pip install -e ".[anchors]"``).
"""

from __future__ import annotations

import argparse
import json
import math
import time


def available() -> str | None:
    """None when jax can be imported, else the reason (one line)."""
    try:
        import jax  # noqa: F401
    except ImportError as exc:
        return f"jax is not installed ({exc}); pip install -e '.[anchors]' to run the JAX anchor"
    return None


def make_run(d: int = 10, n_context: int = 10, batch: int = 2048, lr: float = 2e-2, steps: int = 2000):
    """``(init, update)``: ``init(seed) -> state``; ``update(state, step) -> (state, loss)``, jit-compiled."""
    import jax
    import jax.numpy as jnp

    D, T = d + 1, n_context + 1
    lr_min = 0.1 * lr
    b1, b2, eps = 0.9, 0.999, 1e-8
    key_mask = jnp.arange(T) < n_context  # keys: the context tokens only (the query is hidden)

    def sample(key):
        kx, kw = jax.random.split(key)
        x = jax.random.uniform(kx, (batch, T, d), minval=-0.5, maxval=0.5)
        w = jax.random.normal(kw, (batch, d))
        y = jnp.einsum("btd,bd->bt", x, w)
        tokens = jnp.concatenate([x, jnp.where(jnp.arange(T)[:, None] < n_context, y[..., None], 0.0)], axis=-1)
        return tokens, y[:, -1]

    def loss_fn(params, tokens, y_q):
        q = tokens @ params["W_q"].T
        k = tokens @ params["W_k"].T
        v = tokens @ params["W_v"].T
        pattern = jnp.where(key_mask[None, None, :], q @ jnp.swapaxes(k, 1, 2), 0.0)  # linear attention
        out = tokens + (pattern @ v) @ params["W_o"].T
        pred = -out[:, -1, -1]
        return 0.5 * jnp.mean((pred - y_q) ** 2)

    def lr_at(step):
        return lr_min + (lr - lr_min) * 0.5 * (1.0 + jnp.cos(math.pi * step / max(1, steps - 1)))

    @jax.jit
    def update(state, step):
        params, m, v, key = state
        key, sub = jax.random.split(key)
        tokens, y_q = sample(sub)
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, y_q)
        t = step + 1
        m = jax.tree_util.tree_map(lambda a, g: b1 * a + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda a, g: b2 * a + (1 - b2) * g * g, v, grads)
        a = lr_at(step) * jnp.sqrt(1 - b2**t) / (1 - b1**t)
        params = jax.tree_util.tree_map(
            lambda p, mm, vv: p - a * mm / (jnp.sqrt(vv) + eps * jnp.sqrt(1 - b2**t)), params, m, v
        )
        return (params, m, v, key), loss

    def init(seed: int = 0):
        key = jax.random.PRNGKey(seed)
        keys = jax.random.split(key, 5)
        std = {"W_q": 0.02, "W_k": 0.02, "W_v": 0.02, "W_o": 0.02 / math.sqrt(2)}
        params = {n: std[n] * jax.random.normal(k, (D, D)) for n, k in zip(std, keys[:4], strict=True)}
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), keys[4]

    return init, update


class Anchor:
    """A compiled run kept between calls (the benchmark interleaves it with ours): ``updates(n)`` applies
    ``n`` more updates (the learning rate's position wraps at ``steps``). Compiled on construction."""

    def __init__(self, seed: int = 0, **protocol) -> None:
        import jax
        import jax.numpy as jnp

        self.jnp, self.steps, self.version = jnp, protocol.get("steps", 2000), jax.__version__
        init, self.update = make_run(**protocol)
        self.state = init(seed)
        self.step = 0
        t0 = time.perf_counter()
        self.updates(1)
        self.compile_s = time.perf_counter() - t0  # the first update: tracing, compilation and one run

    def updates(self, n: int) -> float:
        loss = None
        for _ in range(n):
            self.state, loss = self.update(self.state, self.jnp.asarray(self.step % self.steps))
            self.step += 1
        return float(loss)  # waits for the last update


def run(steps: int = 200, seed: int = 0, **protocol) -> dict:
    """Train ``steps`` updates; wall time with and without the first (compiling) update."""
    import jax
    import jax.numpy as jnp

    init, update = make_run(steps=protocol.pop("total_steps", 2000), **protocol)
    state = init(seed)
    t0 = time.perf_counter()
    state, loss = update(state, jnp.asarray(0))
    loss.block_until_ready()
    t1 = time.perf_counter()
    losses = [loss]
    for s in range(1, steps):
        state, loss = update(state, jnp.asarray(s))
        losses.append(loss)
    jax.block_until_ready(state)
    t2 = time.perf_counter()
    return {
        "steps": steps,
        "wall_s": t2 - t0,
        "first_update_s": t1 - t0,
        "ms_per_step_with_compile": 1000 * (t2 - t0) / steps,
        "ms_per_step": 1000 * (t2 - t1) / max(1, steps - 1),
        "loss_first": float(losses[0]),
        "loss_last": float(losses[-1]),
        "jax": jax.__version__,
        "devices": [str(dv) for dv in jax.devices()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    reason = available()
    if reason:
        print(json.dumps({"skipped": reason}))
        return 0
    print(json.dumps(run(args.steps, args.seed, total_steps=max(args.steps, 2000))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
