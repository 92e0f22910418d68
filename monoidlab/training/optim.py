"""Optimisers the trainer offers beyond ``torch.optim``: AMSGrad exactly as optax computes it.

``torch.optim.Adam(amsgrad=True)`` keeps the running maximum of the *raw* second moment v_t and
bias-corrects that maximum; optax's ``scale_by_amsgrad`` (the MLP-LDRU authors' optimiser)
keeps the running maximum of the *bias-corrected* second moment v̂_t = v_t / (1 − β₂^t). Early
in training v̂_t shrinks while v_t grows, so the two differ most in the first steps (torch's
steps stay 1.2–1.5× larger for a while, measured with the authors' code). Per parameter, with gradient g at step t:

    m_t = (1 − β₁) g + β₁ m_{t−1}            v_t = (1 − β₂) g² + β₂ v_{t−1}
    m̂_t = m_t / (1 − β₁^t)                   v̂_t = v_t / (1 − β₂^t)
    u_t = max(u_{t−1}, v̂_t)  (u_0 = 0)       p ← p − lr · m̂_t / (sqrt(u_t + eps_root) + eps)

``weight_decay`` adds ``weight_decay · p`` to the gradient first (optax's
``add_decayed_weights`` before the optimiser, as the authors chain it).

Example
-------
>>> import torch
>>> p = torch.nn.Parameter(torch.tensor([1.0]))
>>> opt = AMSGradOptax([p], lr=0.1)
>>> p.grad = torch.tensor([2.0]); opt.step()
>>> round(p.item(), 6)  # the first step is lr · sign(g), as for Adam
0.9
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from monoidlab.errors import InputError

__all__ = ["AMSGradOptax"]


class AMSGradOptax(torch.optim.Optimizer):
    """AMSGrad with optax's update (the maximum of the bias-corrected second moment).

    Parameters
    ----------
    params : iterable of parameters or parameter groups.
    lr : learning rate (the trainer sets it every step).
    betas : (β₁, β₂), optax's defaults (0.9, 0.999).
    eps, eps_root : added outside and inside the square root (optax: 1e-8 and 0).
    weight_decay : decoupled-from-nothing L2 term added to the gradient (default 0).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 eps_root: float = 0.0, weight_decay: float = 0.0) -> None:
        if lr < 0 or eps < 0 or eps_root < 0 or weight_decay < 0:
            raise InputError("AMSGradOptax: lr, eps, eps_root and weight_decay must be >= 0")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise InputError(f"AMSGradOptax: betas must lie in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, eps_root=eps_root,
                                      weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["weight_decay"]:
                    g = g.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["mu"] = torch.zeros_like(p)
                    state["nu"] = torch.zeros_like(p)
                    state["nu_max"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                mu, nu, nu_max = state["mu"], state["nu"], state["nu_max"]
                mu.mul_(b1).add_(g, alpha=1 - b1)
                nu.mul_(b2).addcmul_(g, g, value=1 - b2)
                torch.maximum(nu_max, nu / (1 - b2**t), out=nu_max)
                denom = (nu_max + group["eps_root"]).sqrt_().add_(group["eps"])
                p.addcdiv_(mu, denom, value=-group["lr"] / (1 - b1**t))
        return loss
