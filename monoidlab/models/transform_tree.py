"""The transformation tree model: each letter is a learned function on n states, composed over
the balanced tree (after PD-SSM, Terzić et al. 2025; docs/models.md, "Depth-exact models").

Equations (column-vector convention)
------------------------------------
Letter a has logits ``L(a)`` (n × n); column j is the distribution of the next state from
state j:

* soft ``S(a) = softmax(L(a) / temperature)`` over each column (over rows i, for each j);
* hard ``H(a)`` = one-hot of each column's argmax of ``L(a)``: ``H(a)[i, j] = 1`` iff
  ``i = f_a(j)``, with ``f_a(j) = argmax_i L(a)[i, j]`` (the first index on a tie);
* ``P(a) = H(a)`` in the forward pass, with the gradient of ``S(a)``: PD-SSM's
  ``H + S − S.detach()``, computed so that the forward value is *exactly* H (a
  straight-through function, not a float sum that would round 1 + s − s).

A node with left child u and right child v holds ``P(uv) = P(v) @ P(u)`` ("u then v"); the
string is right-padded with the identity matrix to a power of two and reduced pairwise,
(0, 1), (2, 3), ..., level by level. The root maps the start state 0 to the final state:
``s = P(w) e_0``, and the class logits are ``readout @ s`` (``readout``: (n_classes, n)), so
with hard matrices the logits are the readout column of the final state and the model is a
DFA with n states (:meth:`TransformTree.learned_automaton`), exact at every length; its
finite-table view (:meth:`TransformTree.finite_table`) has the learned DFA's transformation
semigroup as codes.

Offsets (``forward(tokens, lengths, offsets)``) put string b at buffer positions r_b.. with
the identity everywhere else; the root at level ceil(log2(r_b + L_b)) is then the same
product P(w), whatever the offset, and so is the whole-buffer root this module reads.

Computation order. 0/1 matrices multiply exactly in floating point, so the forward value does
not depend on the order of the products, and the gradient (the derivative of one multilinear
function at one point) only through float summation order. Two orders are implemented:

* ``"tree"``: the balanced tree of batched n × n matmuls under autograd, (B, M, n, n) leaf
  matrices (M the buffer size), O(B · M · n³) arithmetic in O(log M) batched steps.
* ``"chain"``: the state vector propagated left to right, ``s_t = P(x_t) s_{t−1}``. With hard
  matrices this is an integer walk ``q_t = f_{x_t}(q_{t−1})`` (the DFA run, O(B · T)), and its
  backward pass is written out: ``u_T = ∂loss/∂s``, ``∂loss/∂P(x_t)[:, q_{t−1}] += u_t``,
  ``u_{t−1}[j] = u_t[f_{x_t}(j)]`` (a gather: ``P(x_t)ᵀ u_t``), O(B · T · n) in all, in T
  sequential steps.

``"auto"`` (:meth:`TransformTree.order_for`) takes the chain on the CPU, where it was as fast or
faster at every size measured (a training step at batch 64, lengths up to 40: about 2 ms for n = 4
to 30, against 2–40 ms for the tree and about 24 ms for MLP-LDRU with d = 32, one thread),
and on an accelerator the tree while ``B · M · n²`` is at most
:attr:`TransformTree.tree_elements` (few kernel launches; unmeasured), else the chain (the
suite has a 341-state language).

Example
-------
>>> import torch
>>> _ = torch.manual_seed(0)
>>> model = TransformTree(vocab_size=2, n_classes=2, states=3).eval()
>>> tokens = torch.tensor([[0, 1, 1, 0, 1], [1, 1, 0, 0, 0]])
>>> logits = model(tokens, torch.tensor([5, 2]))
>>> logits.shape
torch.Size([2, 2])
>>> dfa = model.learned_automaton()          # the same machine, as plain tables
>>> dfa.classify(tokens.numpy(), [5, 2]).tolist() == logits.argmax(1).tolist()
True
>>> model.finite_table().fold(tokens.numpy(), [5, 2]).tolist() == logits.argmax(1).tolist()
True
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.geometry import Padding, buffer_size
from monoidlab.models.common import NodeStates, collect_nodes, read_inputs, read_offsets
from monoidlab.models.finite import FiniteTable
from monoidlab.models.options import ModelOptions, one_of, positive_int
from monoidlab.strings import schedules

__all__ = ["TransformTree", "TransformTreeOptions", "LearnedDFA", "MAX_STATES", "ORDERS"]

MAX_STATES = 1024
MAX_STATE_FACTOR = 16
ORDERS = ("auto", "tree", "chain")
STARTS = ("fixed",)
RELAXATIONS = ("straight-through", "soft")
TABLE_ENTRIES = 2**27  # most entries (k * k codes) of a finite table built here: 1 GiB int64


def _positive_number(options: ModelOptions, name: str) -> None:
    v = getattr(options, name)
    if isinstance(v, bool) or not isinstance(v, int | float) or not (
            math.isfinite(v) and v > 0):
        raise InputError(f"option {name!r}: a finite number > 0, got {type(v).__name__} {v!r}")


STANDALONE_STATES = 8


@dataclass(frozen=True)
class TransformTreeOptions(ModelOptions):
    """The transformation tree model's hyper-parameters.

    states : n, the number of states of the learned automaton (1..1024); 0 (the default) =
        auto: ``state_factor`` × the minimal automaton's state count of the run's language,
        set by the trainer (:meth:`for_language`; ``STANDALONE_STATES`` for a model built
        without a language).
    state_factor : the multiple of the minimal automaton's state count that ``states = 0``
        gives (1..16; spare states leave gradient descent room to reach a correct automaton
        that is not the minimal one).
    temperature : softmax temperature of the soft columns S = softmax(L / temperature) (the
        gradient's; the forward value is the hard argmax whatever the temperature).
    init_scale : standard deviation of the initial transition logits and readout.
    relaxation : what the training forward composes: ``"straight-through"`` (the default: the
        hard matrices H, with S's gradient) or ``"soft"`` (the soft matrices S themselves, a
        probabilistic automaton whose state is a distribution, with their exact gradient).
        Evaluation, the finite table and the certificate always use H, the argmax machine.
    final_temperature : ``"soft"`` only: the temperature falls geometrically from
        ``temperature`` to this over ``anneal_steps`` training steps, so that S hardens
        towards H (0, the default: no annealing).
    anneal_steps : the number of training steps of that fall (counted by the model, kept in
        its weights, so a resumed run goes on where it stopped; a restart starts again).
    start : ``"fixed"`` (the start state is state 0; the only choice: states are
        interchangeable, so a learned start adds nothing a permutation of states cannot do).

    >>> TransformTreeOptions(states=8).temperature
    1.0
    >>> TransformTreeOptions(states=-1)
    Traceback (most recent call last):
    ...
    monoidlab.errors.InputError: option 'states': an integer >= 0, got int -1
    """

    # the model is built from ``states`` alone (the factor is read by for_language, and a
    # model built without a language takes STANDALONE_STATES)
    UNSIZED = frozenset({"state_factor"})

    states: int = 0
    state_factor: int = 1
    temperature: float = 1.0
    init_scale: float = 1.0
    start: str = "fixed"
    relaxation: str = "straight-through"
    final_temperature: float = 0.0
    anneal_steps: int = 0

    def check(self) -> None:
        positive_int(self, "states", minimum=0)
        if self.states > MAX_STATES:
            raise InputError(f"option 'states': at most {MAX_STATES}, got {self.states} "
                             f"(n × n matrices per letter and per tree node)")
        positive_int(self, "state_factor")
        if self.state_factor > MAX_STATE_FACTOR:
            raise InputError(f"option 'state_factor': at most {MAX_STATE_FACTOR}, got "
                             f"{self.state_factor}")
        _positive_number(self, "temperature")
        _positive_number(self, "init_scale")
        one_of(self, "start", STARTS)
        one_of(self, "relaxation", RELAXATIONS)
        positive_int(self, "anneal_steps", minimum=0)
        if self.final_temperature != 0:
            _positive_number(self, "final_temperature")
            if self.relaxation != "soft" or not self.anneal_steps:
                raise InputError("option 'final_temperature': anneals the soft relaxation, so it "
                                 "needs relaxation = 'soft' and anneal_steps >= 1")


    def for_language(self, lang: Any) -> TransformTreeOptions:
        """These options with ``states = 0`` (auto) set to ``state_factor`` × ``lang``'s minimal
        automaton's state count (at most ``MAX_STATES``)."""
        if self.states:
            return self
        import dataclasses

        return dataclasses.replace(
            self, states=min(MAX_STATES, self.state_factor * int(lang.n_states)))


class _StraightThrough(torch.autograd.Function):
    """Forward: the hard matrices exactly; backward: the gradient goes to the soft ones."""

    @staticmethod
    def forward(ctx: Any, soft: Tensor, hard: Tensor) -> Tensor:
        return hard.clone()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return grad, None


class _Chain(torch.autograd.Function):
    """The final state vector ``s = P(x_T) ... P(x_1) e_0`` of 0/1 column-one-hot matrices,
    by an integer walk, with the exact gradient with respect to the matrices.

    Inputs: ``matrices`` (V + 1, n, n) (row V: the identity, for padding positions),
    ``functions`` (V + 1, n) long, ``functions[a, j]`` = the row of column j's one; ``tokens``
    (B, T) long (V at padding positions). Output (B, n): one-hot of the final state.
    """

    buffered = 2**22  # most B * T * n for the backward pass's one-scatter form

    @staticmethod
    def forward(ctx: Any, matrices: Tensor, functions: Tensor, tokens: Tensor) -> Tensor:
        B, T = tokens.shape
        n = functions.shape[1]
        flat = functions.reshape(-1)
        q = torch.zeros(B, dtype=torch.long, device=tokens.device)
        before = torch.empty(B, T, dtype=torch.long, device=tokens.device)
        rows = tokens * n  # row of letter x_t in `flat`
        for t in range(T):
            before[:, t] = q
            q = flat[rows[:, t] + q]
        ctx.save_for_backward(functions, tokens, before)
        ctx.shape = matrices.shape
        return F.one_hot(q, n).to(matrices.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None]:
        functions, tokens, before = ctx.saved_tensors
        B, T = tokens.shape
        V1, n, _ = ctx.shape
        u = grad
        out = grad.new_zeros(V1 * n, n)  # row a * n + j: column j of letter a's matrix
        cols = tokens * n + before  # column q_{t−1} of P(x_t) receives ∂loss/∂s_t
        if B * T * n <= _Chain.buffered:  # every u_t kept, one scatter at the end
            us = grad.new_empty(B, T, n)
            maps = functions[tokens]  # (B, T, n): f_{x_t}
            for t in range(T - 1, -1, -1):
                us[:, t] = u
                u = u.gather(1, maps[:, t])  # P(x_t)ᵀ u: u[f(j)]
            out.index_add_(0, cols.reshape(-1), us.reshape(-1, n))
        else:  # one scatter per step: O(B · n) memory
            for t in range(T - 1, -1, -1):
                out.index_add_(0, cols[:, t], u)
                u = u.gather(1, functions[tokens[:, t]])
        return out.view(V1, n, n).transpose(1, 2), None, None


@dataclass(frozen=True)
class LearnedDFA:
    """A learned automaton as plain tables (not minimised: the model's own n states).

    delta : (n, V) ints, ``delta[q, a]`` the state after letter a from state q.
    output : (n,) ints, the class read in each state.
    start : the start state (0).

    >>> dfa = LearnedDFA(np.array([[0, 1], [1, 0]]), np.array([0, 1]))   # parity
    >>> dfa.classify(np.array([[1, 1, 1], [0, 1, 0]]), [3, 2]).tolist()
    [1, 1]
    """

    delta: np.ndarray
    output: np.ndarray
    start: int = 0

    @property
    def n_states(self) -> int:
        return int(self.delta.shape[0])

    def run(self, tokens: Any, lengths: Any) -> np.ndarray:
        """The final state of each string (a lock-step walk over the batch)."""
        tokens = np.asarray(tokens, np.int64)
        lengths = np.asarray(lengths, np.int64)
        q = np.full(len(lengths), self.start, np.int64)
        for t in range(tokens.shape[1]):
            live = t < lengths
            q = np.where(live, self.delta[q, np.where(live, tokens[:, t], 0)], q)
        return q

    def classify(self, tokens: Any, lengths: Any) -> np.ndarray:
        """The class of each string."""
        return self.output[self.run(tokens, lengths)]

    def counterexample(self, lang: Any) -> list[int] | None:
        """A shortest non-empty string (as tokens) on which this machine's class differs from
        ``lang``'s (an :class:`~monoidlab.algebra.automaton.Automaton` on the same alphabet), or None
        when they agree on every non-empty string: a breadth-first search over the reachable
        pairs (learned state, true state). The empty string is never compared.

        >>> import monoidlab as ml
        >>> LearnedDFA(np.array([[0, 1], [1, 0]]), np.array([0, 1])).counterexample(
        ...     ml.load_language("parity")) is None
        True
        """
        from monoidlab.algebra.languages import as_language

        lang = as_language(lang)
        true_delta = np.asarray(lang.delta, np.int64)
        true_out = np.asarray(lang.output, np.int64)
        V = self.delta.shape[1]
        if true_delta.shape[1] != V:
            raise InputError(f"counterexample: the language has {true_delta.shape[1]} letters, "
                             f"the learned automaton {V}")
        start = (self.start, int(lang.start))
        # pairs reached by a non-empty word (the start pair only once a word leads back to
        # it), each with the pair and letter it was first reached from
        parent: dict[tuple[int, int], tuple[tuple[int, int], int]] = {}
        queue = deque([start])
        while queue:
            pair = queue.popleft()
            p, q = pair
            for a in range(V):
                nxt = (int(self.delta[p, a]), int(true_delta[q, a]))
                if nxt in parent:
                    continue
                parent[nxt] = (pair, a)
                if self.output[nxt[0]] != true_out[nxt[1]]:
                    word = [a]
                    while pair != start:
                        pair, a = parent[pair]
                        word.append(a)
                    return word[::-1]
                if nxt != start:  # the start pair's successors are already queued
                    queue.append(nxt)
        return None

    def to_automaton(self, alphabet: Sequence[str] | None = None,
                     classes: Sequence[str] | None = None,
                     name: str = "transform-tree") -> Any:
        """As a :class:`~monoidlab.algebra.automaton.Automaton` (which minimises it: the reachable part,
        states merged). Default alphabet "0", "1", ... and classes "0", "1", ...

        Note that an Automaton is a Moore machine that also classifies the empty string (by
        the start state's class), which the model never reads.
        """
        from monoidlab.algebra.automaton import Automaton

        V = self.delta.shape[1]
        n_classes = int(self.output.max()) + 1
        return Automaton(alphabet=[str(a) for a in range(V)] if alphabet is None else alphabet,
                         delta=self.delta, start=self.start, output=self.output,
                         classes=[str(c) for c in range(n_classes)] if classes is None
                         else classes, name=name)


class TransformTree(nn.Module):
    """Transformation tree classifier: letters are learned functions on n states.

    Parameters
    ----------
    vocab_size, n_classes : alphabet size (tokens 0..vocab_size-1) and number of classes.
    options : :class:`TransformTreeOptions` (or its fields as keywords:
        ``TransformTree(2, 2, states=4)``).

    ``logits`` (V, n, n): column j of letter a's matrix scores the next state from state j;
    ``readout`` (n_classes, n): class logits per state. Both start as normal(0, init_scale).
    Padding is the identity (a node with an all-padding child is its other child), so this
    model has no padding state.
    """

    tree_elements = 2**24  # most B * M * n * n (leaf matrix entries) for the "tree" order

    def __init__(self, vocab_size: int, n_classes: int,
                 options: TransformTreeOptions | None = None, **kw: Any) -> None:
        super().__init__()
        o = self.options = TransformTreeOptions.build(options if options is not None else kw,
                                                      "transform-tree")
        # states = 0 (auto) is sized from the language by a run (TransformTreeOptions.
        # for_language); a model built without one (a test, a notebook) gets STANDALONE_STATES
        n = self.n_states = o.states or STANDALONE_STATES
        self.vocab_size, self.n_classes = vocab_size, n_classes
        self.temperature = float(o.temperature)
        self.padding = Padding.IDENTITY
        self.logits = nn.Parameter(torch.randn(vocab_size, n, n) * o.init_scale)
        self.readout = nn.Parameter(torch.randn(n_classes, n) * o.init_scale)
        self.soft = o.relaxation == "soft"
        if self.soft:  # training steps seen, for the annealing (only here: old weights load)
            self.register_buffer("trained_steps", torch.zeros((), dtype=torch.long))

    # ------------------------------------------------------------------ letters

    def functions(self) -> Tensor:
        """(V, n) long: ``f_a(j)``, the state after letter a from state j (no gradient)."""
        return self.logits.detach().argmax(1)

    def current_temperature(self) -> float:
        """The softmax temperature now: ``temperature``, annealed geometrically towards
        ``final_temperature`` over ``anneal_steps`` training steps (``relaxation = "soft"``).

        >>> m = TransformTree(2, 2, states=3, relaxation="soft", temperature=1.0,
        ...                   final_temperature=0.01, anneal_steps=4)
        >>> _ = m.trained_steps.fill_(2); round(m.current_temperature(), 6)
        0.1
        """
        o = self.options
        if not (self.soft and o.final_temperature):
            return self.temperature
        steps: Tensor = self.trained_steps  # type: ignore[assignment]
        done = min(1.0, int(steps) / o.anneal_steps)
        return self.temperature * (o.final_temperature / self.temperature) ** done

    def soft_matrices(self) -> Tensor:
        """(V, n, n): S, each column a softmax (sums to 1 over rows)."""
        return torch.softmax(self.logits / self.current_temperature(), dim=1)

    def _soft_step(self) -> bool:
        """A training call of the soft relaxation (it composes S itself)."""
        return self.soft and self.training and torch.is_grad_enabled()

    def matrices(self) -> Tensor:
        """(V, n, n): the letters' matrices P, valued H (0/1, column-one-hot) with S's
        gradient; in a training call of the soft relaxation, S itself."""
        if self._soft_step():
            return self.soft_matrices()
        f = self.functions()
        hard = F.one_hot(f, self.n_states).transpose(1, 2).to(self.logits.dtype)
        if not torch.is_grad_enabled() or not self.logits.requires_grad:
            return hard
        return _StraightThrough.apply(self.soft_matrices(), hard)

    def _extended(self) -> tuple[Tensor, Tensor]:
        """Matrices and functions with the identity appended as letter V (padding)."""
        n = self.n_states
        P = self.matrices()
        eye = torch.eye(n, dtype=P.dtype, device=P.device)
        f = self.functions()
        ident = torch.arange(n, device=f.device)
        return torch.cat([P, eye[None]]), torch.cat([f, ident[None]])

    # ------------------------------------------------------------------ reductions

    def _placed(self, tokens: Tensor, lengths: Tensor, longest: int,
                offsets: Tensor | None) -> tuple[Tensor, Tensor, int]:
        """Letter ids over the buffer's first ``end`` positions (V at padding), the offsets
        and ``end`` (the furthest string end)."""
        T = tokens.shape[1]
        offsets, end = read_offsets(tokens, lengths, longest, offsets)
        src = torch.arange(end, device=tokens.device) - offsets[:, None]
        valid = (src >= 0) & (src < lengths[:, None])
        ids = torch.where(valid, tokens.gather(1, src.clamp(0, T - 1)), self.vocab_size)
        return ids, offsets, end

    def order_for(self, batch: int, end: int, device: torch.device | str = "cpu") -> str:
        """The order :meth:`final_states` picks for ``batch`` strings ending by ``end``:
        ``"chain"`` on the CPU (measured as fast or faster there at every size tried, n =
        4..341, lengths 40..2000: its O(B · T · n) walk against the tree's O(B · M · n³)); on an
        accelerator ``"tree"`` (log-depth, few kernel launches) while ``batch · buffer · n²``
        is at most :attr:`tree_elements`, else ``"chain"``.

        >>> TransformTree(2, 2, states=4).order_for(64, 40, "cuda")
        'tree'
        """
        n = self.n_states
        if torch.device(device).type == "cpu":
            return "chain"
        return "tree" if batch * buffer_size(end) * n * n <= self.tree_elements else "chain"

    def final_states(self, tokens: Tensor, lengths: Tensor | None = None,
                     offsets: Tensor | None = None, order: str = "auto") -> Tensor:
        """(B, n): ``s = P(w) e_0`` for each string (one-hot of the final state), with the
        straight-through gradient. ``order``: ``"auto"``, ``"tree"`` or ``"chain"`` (module
        docstring); every order gives the same value. A training call of a ``"soft"`` model
        returns the soft state distribution instead (the product over S: in the tree order, or in
        the chain order as a distribution walked from the start state, :meth:`_soft_walk`)."""
        if order not in ORDERS:
            raise InputError(f"order: one of {', '.join(ORDERS)}, got {order!r}")
        tokens, lengths, longest = read_inputs(tokens, lengths)
        B = len(lengths)
        if not B:
            return self.readout.new_zeros(0, self.n_states)
        ids, _, end = self._placed(tokens, lengths, longest, offsets)
        if order == "auto":
            order = self.order_for(B, end, ids.device)
        P, f = self._extended()
        if order == "chain":  # offsets only add identities: the same walk
            if self._soft_step():  # soft columns: a distribution, not an integer walk
                return self._soft_walk(P, ids)
            return _Chain.apply(P, f, ids)
        h = P[ids]  # (B, end, n, n)
        eye = P[self.vocab_size]
        while h.shape[1] > 1:
            if h.shape[1] % 2:  # right padding: the identity
                h = torch.cat([h, eye.expand(B, 1, -1, -1)], dim=1)
            h = h[:, 1::2] @ h[:, 0::2]  # P(uv) = P(v) P(u)
        return h[:, 0, :, 0]  # P(w) e_0

    @staticmethod
    def _soft_walk(P: Tensor, ids: Tensor) -> Tensor:
        """``s_t = P(x_t) s_{t-1}`` from ``e_0`` under autograd: the soft matrices' product
        applied to the start state left to right, O(B · T · n²) (the tree order's O(B · M · n³)
        gives the same value up to float rounding)."""
        B, n = ids.shape[0], P.shape[-1]
        s = P.new_zeros(B, n, 1)
        s[:, 0] = 1
        for t in range(ids.shape[1]):
            s = P[ids[:, t]] @ s
        return s[:, :, 0]

    def soft_states(self, tokens: Tensor, lengths: Tensor | None = None) -> Tensor:
        """(B, n): the soft relaxation's state distribution ``S(x_L) … S(x_1) e_0`` at the
        current temperature, in any mode and without gradient (a teacher to distil from).

        >>> m = TransformTree(2, 2, states=3, relaxation="soft")
        >>> m.soft_states(torch.tensor([[0, 1, 1]]), torch.tensor([3])).sum().item()
        1.0
        """
        tokens, lengths, longest = read_inputs(tokens, lengths)
        if not len(lengths):
            return self.readout.new_zeros(0, self.n_states)
        ids, _, _ = self._placed(tokens, lengths, longest, None)
        with torch.no_grad():
            S = self.soft_matrices()
            eye = torch.eye(self.n_states, dtype=S.dtype, device=S.device)
            return self._soft_walk(torch.cat([S, eye[None]]), ids)

    def forward(self, tokens: Tensor, lengths: Tensor | None = None,
                offsets: Tensor | None = None) -> Tensor:
        """Logits (B, n_classes) = ``readout @ P(w) e_0`` (in training with ``relaxation =
        "soft"``, ``readout`` of the soft state distribution; each such call is one step of
        the annealing).

        ``offsets`` (optional, (B,) ints >= 0) places string b at buffer positions
        r_b..r_b+L_b-1 with identity padding on both sides; the product, hence the value, is
        the same at every offset (exactly, with hard matrices).
        """
        if self._soft_step():
            steps: Tensor = self.trained_steps  # type: ignore[assignment]
            steps.add_(1)
        return self.final_states(tokens, lengths, offsets) @ self.readout.T

    def forward_at_offsets(self, tokens: Tensor, lengths: Tensor, offsets: Tensor) -> Tensor:
        """:meth:`forward` with every string at its left offset (:class:`OffsetModel`)."""
        return self.forward(tokens, lengths, offsets)

    def eval_group(self, length: int) -> int:
        """Strings whose lengths share a balanced buffer may share an evaluation call (as
        MLP-LDRU): :func:`~monoidlab.geometry.buffer_size`."""
        return buffer_size(length)

    # ------------------------------------------------------------------ the finite machine

    def transformations(self) -> np.ndarray:
        """(V, n) int64: the hard function of each letter, state j -> argmax of column j."""
        return self.functions().cpu().numpy().astype(np.int64)

    def readout_classes(self) -> np.ndarray:
        """(n,) int64: the class read in each state (argmax of its readout column)."""
        return self.readout.detach().argmax(0).cpu().numpy().astype(np.int64)

    def learned_automaton(self) -> LearnedDFA:
        """The learned DFA: ``delta`` (n, V) = :meth:`transformations` transposed, start 0,
        ``output`` = :meth:`readout_classes`. Exactly what the model computes, at every
        length (``LearnedDFA.to_automaton`` gives a minimised
        :class:`~monoidlab.algebra.automaton.Automaton`)."""
        return LearnedDFA(np.ascontiguousarray(self.transformations().T),
                          self.readout_classes(), 0)

    def load_automaton(self, delta: Any, output: Any, start: int = 0,
                       margin: float = 10.0) -> None:
        """Set the weights so that the hard machine is the given DFA (``delta`` (m, V) next
        states, ``output`` (m,) classes, m <= n): its start state becomes state 0, the others
        1..m-1 in order, and the n - m spare states map to themselves (unreachable). Each
        column's logits are ``margin`` at its image and ``-margin`` elsewhere, so the soft
        columns at temperature τ put all but about (n - 1)·e^(-2·margin/τ) of their mass there.

        >>> m = TransformTree(2, 2, states=4)
        >>> m.load_automaton([[1, 0], [0, 1]], [1, 0])   # parity of the 0s, 2 states
        >>> m.learned_automaton().delta.tolist(), m.readout_classes().tolist()[:2]
        ([[1, 0], [0, 1], [2, 2], [3, 3]], [1, 0])
        """
        delta, output = np.asarray(delta, np.int64), np.asarray(output, np.int64)
        m, n, V = len(delta), self.n_states, self.vocab_size
        if delta.shape != (m, V) or output.shape != (m,) or not 0 <= start < m:
            raise InputError(f"load_automaton: delta (m, {V}) and output (m,) with a start in "
                             f"0..m-1, got shapes {delta.shape}, {output.shape} and start {start}")
        if m > n:
            raise InputError(f"load_automaton: the automaton has {m} states, the model {n}")
        if delta.min() < 0 or delta.max() >= m or output.min() < 0 or \
                output.max() >= self.n_classes:
            raise InputError("load_automaton: a next state outside 0..m-1 or a class outside "
                             f"0..{self.n_classes - 1}")
        order = np.r_[start, np.delete(np.arange(m), start)]  # new state i = old order[i]
        new_of = np.empty(m, np.int64)
        new_of[order] = np.arange(m)
        f = np.tile(np.arange(n), (V, 1))  # (V, n): spare states map to themselves
        f[:, :m] = new_of[delta[order]].T
        classes = np.zeros(n, np.int64)
        classes[:m] = output[order]
        with torch.no_grad():
            self.logits.fill_(-margin)
            self.logits.scatter_(1, torch.as_tensor(f, device=self.logits.device)[:, None, :],
                                 margin)
            self.readout.fill_(-margin)
            self.readout.scatter_(0, torch.as_tensor(classes, device=self.readout.device)[None],
                                  margin)

    def finite_table(self, max_codes: int = 100_000) -> FiniteTable:
        """The model as a finite table (identity padding).

        Codes: the transformations of the learned DFA reachable from the letters' functions
        under composition (its transition semigroup: the identity only when a non-empty
        word acts as it), numbered in shortlex order of their shortest words.
        ``leaf[a]`` = the code of f_a; ``table[i, j]`` = the code of "i then j" (f_j ∘ f_i);
        ``head[i]`` = the class of state f_i(0). Raises
        :class:`~monoidlab.errors.MonoidTooLarge` above ``max_codes`` codes, or when the k × k
        table would exceed 2^27 entries (1 GiB).
        """
        from monoidlab.algebra._enumerate import HashCollision, enumerate_monoid

        if isinstance(max_codes, bool) or not isinstance(max_codes, int | np.integer) or \
                max_codes < 1:
            raise InputError(f"max_codes: an integer >= 1, got {max_codes!r}")
        max_codes = int(max_codes)
        delta = np.ascontiguousarray(self.transformations().T)
        name = "transform-tree"
        try:
            try:
                out = enumerate_monoid(delta, max_codes + 1, name, exact_bytes=False)
            except HashCollision:  # astronomically rare: exact keys
                out = enumerate_monoid(delta, max_codes + 1, name, exact_bytes=True)
        except MonoidTooLarge as exc:
            raise MonoidTooLarge(f"{name}: the learned automaton ({self.n_states} states) has "
                                 f"more than max_codes={max_codes} transformations ({exc})"
                                 ) from None
        elements, right_rows, _, _, index = out
        E = np.concatenate(elements)
        right = np.concatenate(right_rows).astype(np.int64)
        codes = np.unique(right)  # every non-empty word's element: u·a for some u, a
        k = len(codes)
        if k > max_codes:
            raise MonoidTooLarge(f"{name}: the learned automaton has {k} transformations, "
                                 f"more than max_codes={max_codes}")
        if k * k > TABLE_ENTRIES:
            raise MonoidTooLarge(f"{name}: {k} transformations need a {k} x {k} table, more "
                                 f"than the {TABLE_ENTRIES} entries built here")
        code_of = np.full(len(E), -1, np.int64)
        code_of[codes] = np.arange(k)
        rows = E[codes]  # (k, n)
        n = rows.shape[1]
        table = np.empty((k, k), np.int64)
        chunk = max(1, 2**22 // max(1, k * n))
        for lo in range(0, k, chunk):
            first = rows[lo: lo + chunk].astype(np.int64)  # (c, n): f_i
            # "i then j": q -> f_j(f_i(q)), for every j at once: rows[j, f_i(q)]
            composed = rows[:, first].transpose(1, 0, 2).reshape(-1, n)  # (c * k, n)
            found = index.lookup(index.keys(composed), composed, strict=False)
            if (found < 0).any():  # cannot happen: the closure is closed under products
                raise RuntimeError("finite_table: a product fell outside the closure")
            table[lo: lo + len(first)] = code_of[found].reshape(len(first), k)
        head = self.readout_classes()[rows[:, 0].astype(np.int64)]
        return FiniteTable(code_of[right[0]], table, head, Padding.IDENTITY)

    # ------------------------------------------------------------------ node states

    def _function_levels(self, tokens: Tensor, lengths: Tensor, longest: int,
                         offsets: Tensor | None) -> tuple[list[Tensor], Tensor, int]:
        """Every level of the reduction over the whole buffer as integer functions,
        (B, M >> k, n) long, ``[b, node, j]`` = the node's state after starting in j."""
        ids, offsets, end = self._placed(tokens, lengths, longest, offsets)
        M = buffer_size(end)
        B = ids.shape[0]
        if M > end:
            ids = torch.cat([ids, ids.new_full((B, M - end), self.vocab_size)], dim=1)
        _, f = self._extended()
        level = f[ids]
        levels = [level]
        while level.shape[1] > 1:
            left, right = level[:, 0::2], level[:, 1::2]
            level = right.gather(2, left)  # (uv)(j) = f_v(f_u(j))
            levels.append(level)
        return levels, offsets, M

    def _as_matrices(self, functions: Tensor) -> Tensor:
        """(..., n) functions -> (..., n * n) flattened 0/1 matrices (row-major [i, j])."""
        n = self.n_states
        return F.one_hot(functions, n).transpose(-1, -2).reshape(
            *functions.shape[:-1], n * n).to(self.readout.dtype)

    def node_states(self, tokens: Tensor, lengths: Tensor | None = None,
                    offsets: Tensor | None = None) -> NodeStates:
        """Every internal node's state, in the order of ``schedules.schedule("balanced", L,
        r)``: the node's hard matrix P (n × n, 0/1) flattened row-major to n² values (so
        ``P[i, j]`` is ``state[i * n + j]``). A node with an all-padding child holds its
        other child's matrix (identity padding). Meant for probing at small n (n² floats per
        node)."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        with torch.no_grad():
            levels, offsets, M = self._function_levels(tokens, lengths, longest, offsets)
        internal = torch.cat(levels[1:], dim=1) if len(levels) > 1 else levels[0][:, :0]
        big = schedules.schedule("balanced", M)
        ns = collect_nodes(internal, big, "balanced", lengths, offsets)
        ns.states = self._as_matrices(ns.states) * ns.valid[..., None].to(self.readout.dtype)
        return ns

    # ------------------------------------------------------------------ OperatorModel

    def root_states(self, tokens: Tensor, lengths: Tensor) -> Tensor:
        """Each string's root: its hard matrix P(w) flattened, (B, n²) (no gradient)."""
        tokens, lengths, longest = read_inputs(tokens, lengths)
        if not len(lengths):
            return self.readout.new_zeros(0, self.n_states ** 2)
        with torch.no_grad():
            levels, _, _ = self._function_levels(tokens, lengths, longest, None)
        return self._as_matrices(levels[-1][:, 0])

    def apply_operator(self, a: Tensor, b: Tensor) -> Tensor:
        """One tree node on flattened matrices: "a then b", ``P(b) @ P(a)``."""
        n = self.n_states
        return (b.view(-1, n, n) @ a.view(-1, n, n)).reshape(*a.shape)

    def padding_state(self) -> Tensor | None:
        """None: padding is the identity (a node with an all-padding child is its other
        child)."""
        return None

    def state_logits(self, state: Tensor) -> Tensor:
        """Class logits of a flattened matrix: ``readout @ P e_0``."""
        n = self.n_states
        return state.view(-1, n, n)[:, :, 0] @ self.readout.T

    def visible_state(self, state: Tensor) -> Tensor:
        return state
