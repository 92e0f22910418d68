"""Slow, obviously-correct references used only by the tests (moved out of the package).

Each rebuilds by another route what a fast implementation computes: the schedules' trees by
top-down recursion and binary expansion, node labels by labelling every child substring on its
own, the tree models' outputs one string and one node at a time.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from monoidlab.models.common import check_inputs, gather_last
from monoidlab.strings.schedules import schedule
from monoidlab.strings.schedules import schedule as get_schedule

# Schedules: a tree is a buffer position (leaf) or a pair of trees.


def reference_trees(name: str, length: int, offset: int = 0) -> list:
    """Nested-tuple trees of the schedule: ``[root]``, or for ``scan`` the L prefix trees.

    >>> reference_trees("scan", 3)
    [0, (0, 1), ((0, 1), 2)]
    """
    sched = schedule(name, length, offset)  # validates arguments; only `buffer` is used
    if name == "balanced":
        def build(a: int, b: int):
            if b - a == 1:
                return a
            mid = (a + b) // 2
            return (build(a, mid), build(mid, b))

        return [build(0, sched.buffer)]
    if name == "chain":
        tree = 0
        for p in range(1, length):
            tree = (tree, p)
        return [tree]

    def block(start: int, size: int):  # balanced tree over an aligned power-of-two block
        if size == 1:
            return start
        return (block(start, size // 2), block(start + size // 2, size // 2))

    prefixes = []
    for t in range(1, length + 1):
        # left fold over t's binary expansion, most significant block first
        tree, start = None, 0
        for k in reversed(range(t.bit_length())):
            if t >> k & 1:
                b = block(start, 1 << k)
                tree = b if tree is None else (tree, b)
                start += 1 << k
        prefixes.append(tree)
    return prefixes


def reference_spans(name: str, length: int, offset: int = 0) -> list[tuple]:
    """Sorted ``(level, left_span, right_span)`` of every internal node, from the references.

    Spans are tuples; empty spans follow the module convention ((0, 0) left of the string,
    (L, L) right of it). Shared subtrees of the ``scan`` prefixes count once.

    >>> reference_spans("balanced", 3)
    [(1, (0, 1), (1, 2)), (1, (2, 3), (3, 3)), (2, (0, 2), (2, 3))]
    """
    seen: dict[tuple, tuple] = {}

    def span(tree) -> tuple[int, int]:
        leaves = _leaves(tree)
        real = [p - offset for p in leaves if 0 <= p - offset < length]
        if real:
            return (min(real), max(real) + 1)
        return (0, 0) if leaves[0] < offset else (length, length)

    def visit(tree) -> int:
        """Height of ``tree``; records each internal node under its buffer interval."""
        if not isinstance(tree, tuple):
            return 0
        height = 1 + max(visit(tree[0]), visit(tree[1]))
        leaves = _leaves(tree)
        seen[(leaves[0], leaves[-1] + 1)] = (height, span(tree[0]), span(tree[1]))
        return height

    for root in reference_trees(name, length, offset):
        visit(root)
    return sorted(seen.values())


def _leaves(tree) -> list[int]:
    if not isinstance(tree, tuple):
        return [tree]
    return _leaves(tree[0]) + _leaves(tree[1])


# Node labels
def reference_node_labels(monoid, strings, schedule: str = "balanced", offsets=None) -> list[list]:
    """Slow reference: per string, per node, ``(left, right, node)`` ECs read off substrings.

    Each child's substring (from its span) is labelled with ``element_of`` directly.
    """
    a = monoid.automaton
    out = []
    for i, w in enumerate(strings):
        sched = get_schedule(schedule, len(w), 0 if offsets is None else int(offsets[i]))
        rows = []
        for n in range(sched.n_nodes):
            ecs = []
            for lo, hi in (sched.left_span[n], sched.right_span[n], sched.span[n]):
                sub = w[lo:hi]
                ecs.append(int(monoid.element_of(*a.encode([sub]))[0]) if hi > lo else 0)
            rows.append(tuple(ecs))
        out.append(rows)
    return out


# Models (use them in eval mode)
@torch.no_grad()
def mlp_ldru_forward(model, tokens: Tensor, lengths: Tensor | None = None,
                      offsets: Tensor | None = None) -> Tensor:
    """Slow reference of :meth:`forward`: one string at a time, one node at a time, over
    the tree of ``schedules.schedule("balanced", L, r)``. Use in eval mode."""
    tokens, lengths = check_inputs(tokens, lengths)
    out = []
    for b in range(tokens.shape[0]):
        L, r = int(lengths[b]), 0 if offsets is None else int(offsets[b])
        s = schedule("balanced", L, r)
        pos = torch.arange(s.buffer) - r
        valid = torch.as_tensor(~s.padding_leaf, device=tokens.device)
        tok = tokens[b, pos.clamp(0, L - 1).to(tokens.device)]
        leaves = model.embed(tok[None], valid[None])[0]
        states = list(leaves)
        for i in range(s.n_nodes):
            x, y = states[s.left_child[i]], states[s.right_child[i]]
            states.append(model.drop(model.combine(x, y)))
        out.append(model.head(states[s.root]))
    return torch.stack(out)


@torch.no_grad()
def scan_forward(model, tokens: Tensor, lengths: Tensor | None = None,
                      all_positions: bool = False) -> Tensor:
    """Slow reference: per string, per node of ``schedules.schedule("scan", L)``, in Python.

    Returns (B, n_classes) at the last position, or with ``all_positions`` (B, T,
    n_classes) (zeros past each length).
    """
    tokens, lengths = check_inputs(tokens, lengths)
    B, T = tokens.shape
    out = tokens.new_zeros((B, T, model.n_classes), dtype=model.head.weight.dtype)
    for b in range(B):
        L = int(lengths[b])
        s = schedule("scan", L)
        leaves = model.leaf(tokens[b : b + 1, :L])
        # one (1, 1, ·) state per leaf, then one per node
        states = [tuple(x[:, t : t + 1] for x in leaves) for t in range(L)]
        for i in range(s.n_nodes):
            states.append(model.cell(states[s.left_child[i]], states[s.right_child[i]]))
        for t in range(L):
            h = states[s.prefix_roots[t]][0][0, 0]
            out[b, t] = model.head(torch.relu(h))
    if all_positions:
        return out
    return gather_last(out, lengths)


def reference_forward(model, tokens: Tensor, lengths: Tensor | None = None, *args, **kw) -> Tensor:
    """The slow reference of whichever tree model ``model`` is."""
    from monoidlab.models.mlp_ldru import MLPLDRU

    fn = mlp_ldru_forward if isinstance(model, MLPLDRU) else scan_forward
    return fn(model, tokens, lengths, *args, **kw)


# Memory-augmented RNNs (Delétang et al. 2023): one string, one step, one stack or tape cell at a
# time, in float64, with the stack and tape updates written out as loops.


def _linear(layer, v: Tensor) -> Tensor:
    return layer.weight.double() @ v + layer.bias.double()


def _rnn_step(cell, x: Tensor, h: Tensor) -> Tensor:
    return torch.tanh(cell.weight_ih.double() @ x + cell.bias_ih.double()
                      + cell.weight_hh.double() @ h + cell.bias_hh.double())


def stack_rnn_reference(model, tokens: Tensor, lengths: Tensor) -> Tensor:
    """Logits (B, T, C) of a :class:`~monoidlab.models.stack_rnn.StackRNN`, step by step.

    Stack cell 0 is the top. Push: the new value on top, cell i takes cell i − 1; pop: cell i
    takes cell i + 1 (zero below the bottom); no-op: unchanged; the new stack is the mixture
    weighted by the action probabilities (push, pop, no-op).
    """
    B, T = tokens.shape
    S, C = model.stack_size, model.stack_cell
    out = torch.zeros(B, T, model.n_classes, dtype=torch.float64)
    for b in range(B):
        h = torch.zeros(model.hidden, dtype=torch.float64)
        stack = [torch.zeros(C, dtype=torch.float64) for _ in range(S)]
        for t in range(T):
            tok = int(tokens[b, t]) if t < int(lengths[b]) else 0
            x = torch.zeros(model.vocab_size, dtype=torch.float64)
            x[tok] = 1.0
            h = _rnn_step(model.core, torch.cat([x, stack[0]]), h)
            value = _linear(model.push, h)
            push, pop, noop = torch.softmax(_linear(model.actions, h), 0).tolist()
            new = []
            for i in range(S):
                above = value if i == 0 else stack[i - 1]
                below = stack[i + 1] if i + 1 < S else torch.zeros(C, dtype=torch.float64)
                new.append(push * above + pop * below + noop * stack[i])
            stack = new
            out[b, t] = _linear(model.head, torch.relu(h))
    return out


def tape_rnn_reference(model, tokens: Tensor, lengths: Tensor, input_lengths: Tensor) -> Tensor:
    """Logits (B, T, C) of a :class:`~monoidlab.models.tape_rnn.TapeRNN`, step by step.

    As the released code: write the MLP's value into cell 0 (the head), then apply each
    action's permutation — the identity matrix rolled by 0, −1, +1, −n, +n rows (stay, left,
    right, jump left, jump right; n the input length) — and mix by the action probabilities.
    """
    B, T = tokens.shape
    M, C = model.memory_size, model.memory_cell
    eye = torch.eye(M, dtype=torch.float64)
    out = torch.zeros(B, T, model.n_classes, dtype=torch.float64)
    for b in range(B):
        n = int(input_lengths[b])
        ops = [torch.roll(eye, s, dims=0) for s in (0, -1, 1, -n, n)]
        h = torch.zeros(model.hidden, dtype=torch.float64)
        tape = [torch.zeros(C, dtype=torch.float64) for _ in range(M)]
        for t in range(T):
            tok = int(tokens[b, t]) if t < int(lengths[b]) else 0
            x = torch.zeros(model.vocab_size, dtype=torch.float64)
            x[tok] = 1.0
            h = _rnn_step(model.core, torch.cat([x, tape[0]]), h)
            w = h
            for layer in model.write:
                w = _linear(layer, w) if isinstance(layer, torch.nn.Linear) else torch.relu(w)
            written = [w] + tape[1:]
            probs = torch.softmax(_linear(model.actions, h), 0).tolist()
            new = []
            for m in range(M):
                cell = torch.zeros(C, dtype=torch.float64)
                for p, op in zip(probs, ops):
                    for j in range(M):
                        if op[m, j]:
                            cell = cell + p * written[j]
                new.append(cell)
            tape = new
            out[b, t] = _linear(model.head, torch.relu(h))
    return out

# The implementations before issues 14/17 (kept verbatim in substance: the same operations in
# the same order), for the equivalence tests and bench/bench_speed.py's "vs previous" column.
# They read the parameters of a current model, whose state_dict layout did not change.


def old_associative_scan(fn, elems, record=None):
    """The previous parallel scan: strided slices, ``torch.cat`` and ``stack`` interleave."""
    n = elems[0].shape[1]
    if n < 2:
        return elems

    def call(a, b):
        out = fn(a, b)
        if record is not None and out[0].shape[1]:
            record.append(out)
        return out

    reduced = call(tuple(e[:, 0:-1:2] for e in elems), tuple(e[:, 1::2] for e in elems))
    odd = old_associative_scan(fn, reduced, record)
    if n % 2 == 0:
        even = call(tuple(o[:, :-1] for o in odd), tuple(e[:, 2::2] for e in elems))
    else:
        even = call(odd, tuple(e[:, 2::2] for e in elems))
    even = tuple(torch.cat([e[:, :1], v], dim=1) for e, v in zip(elems, even))

    def interleave(ev, od):
        k = od.shape[1]
        out = torch.stack([ev[:, :k], od], dim=2).flatten(1, 2)
        return torch.cat([out, ev[:, k:]], dim=1) if ev.shape[1] > k else out

    return tuple(interleave(v, o) for v, o in zip(even, odd))


def old_pr_lstm_leaf(model, tokens):
    z = model.embed.weight.t()[tokens] + model.embed.bias
    i, g, o = z.chunk(3, dim=-1)
    c = torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def old_pr_lstm_cell(model, a, b):
    (h1, c1), (h2, c2) = a, b
    i, g, o, f1, f2 = model.binary(torch.cat([h1, h2], dim=-1)).chunk(5, dim=-1)
    c = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f1) * c1 + torch.sigmoid(f2) * c2
    h = torch.sigmoid(o) * torch.tanh(c)
    for layer in model.refine:
        i, g, o, f = layer(h).chunk(4, dim=-1)
        c = torch.sigmoid(i) * torch.tanh(g) + torch.sigmoid(f) * c
        h = torch.sigmoid(o) * torch.tanh(c)
    return h, c


def old_pr_rnn_leaf(model, tokens):
    return (torch.tanh(model.embed.weight.t()[tokens] + model.embed.bias),)


def old_pr_rnn_cell(model, a, b):
    h = torch.tanh(model.binary(torch.cat([a[0], b[0]], dim=-1)))
    for layer in model.refine:
        h = torch.tanh(layer(h))
    return (h,)


def _old_scan_parts(model):
    from monoidlab.models.pr_lstm import PRLSTM

    if isinstance(model, PRLSTM):
        return old_pr_lstm_leaf, old_pr_lstm_cell
    return old_pr_rnn_leaf, old_pr_rnn_cell


def old_scan_forward(model, tokens, lengths=None):
    """The previous PR-LSTM / PR-RNN :meth:`forward`: the whole scan, then the last position."""
    tokens, lengths = check_inputs(tokens, lengths)
    tokens = tokens[:, : int(lengths.max())]
    leaf, cell = _old_scan_parts(model)
    h = old_associative_scan(lambda a, b: cell(model, a, b), leaf(model, tokens))[0]
    return model.head(torch.relu(gather_last(h, lengths)))


def old_scan_forward_all(model, tokens, lengths=None):
    """The previous :meth:`forward_all` of the prefix-scan models."""
    tokens, lengths = check_inputs(tokens, lengths)
    leaf, cell = _old_scan_parts(model)
    h = old_associative_scan(lambda a, b: cell(model, a, b), leaf(model, tokens))[0]
    return model.head(torch.relu(h))


def general_scan_forward_all(model, tokens, lengths=None):
    """PR-LSTM's :meth:`forward_all` before issue 35 (item 10): the general scan
    (``_PrefixScanModel._scan``: level by level, then the recursion's interleave), which
    gradients still take; it is the reference of the no-gradient row path
    (``monoidlab.models.pr_lstm_rows``). Detached."""
    tokens, lengths = check_inputs(tokens, lengths)
    with torch.enable_grad():
        return model.head(torch.relu(model._scan(tokens)[0])).detach()


def _old_operate(model, x, y):
    if model.operator == "sum":
        return x + y
    xy = torch.cat([x, y], dim=-1)
    if model.operator == "linear":
        return model.mix(xy)
    if model.operator == "gated-sum":
        g = torch.sigmoid(model.gate(xy))
        return g * x + (1 - g) * y
    w_x, w_y = model.gates(xy).chunk(2, dim=-1)
    return model.w_o(model.v_x(w_x * x) + model.v_y(w_y * y))


def _old_combine(model, x, y):
    h = _old_operate(model, x, y)
    if model.post_block:
        h = model.post_norm(h + model.post_ffn(h))
    return h


def old_mlp_ldru_forward(model, tokens, lengths=None, offsets=None):
    """The previous MLP-LDRU :meth:`forward` (learned padding): the input block on every buffer
    position, the whole padded buffer at every level, strided pairs and ``torch.cat``."""
    from monoidlab.models.common import ceil_log2

    tokens, lengths = check_inputs(tokens, lengths)
    T = tokens.shape[1]
    offsets = torch.zeros_like(lengths) if offsets is None else torch.as_tensor(offsets)
    top = ceil_log2(offsets + lengths)
    M = 1 << int(top.max())
    src = torch.arange(M) - offsets[:, None]
    valid = (src >= 0) & (src < lengths[:, None])
    e = model.embedding[tokens.gather(1, src.clamp(0, T - 1))] * valid[..., None].float()
    h = model.in_norm(e)
    h = model.drop(h + model.in_ffn(h))
    root = h[:, 0]
    k = 0
    while h.shape[1] > 1:
        k += 1
        h = model.drop(_old_combine(model, h[:, 0::2], h[:, 1::2]))
        root = torch.where((top == k)[:, None], h[:, 0], root)
    return model.head(root)


@torch.no_grad()
def identity_padding_forward(model, tokens, lengths=None, offsets=None):
    """Slow reference of ``padding="identity"``: per string, per node of
    ``schedules.schedule("balanced", L, r)``; a node with an empty child (an empty span) is its
    other child, any other node ``combine``. Returns (logits (B, C), [node states per row])."""
    tokens, lengths = check_inputs(tokens, lengths)
    logits, nodes = [], []
    for b in range(tokens.shape[0]):
        L, r = int(lengths[b]), 0 if offsets is None else int(offsets[b])
        s = schedule("balanced", L, r)
        leaves = model.embed(tokens[b : b + 1, :L])[0]
        # state of every buffer position and node; None = all padding (the empty span)
        states = [leaves[p - r] if r <= p < r + L else None for p in range(s.buffer)]
        row = []
        for i in range(s.n_nodes):
            x, y = states[s.left_child[i]], states[s.right_child[i]]
            v = y if x is None else x if y is None else model.combine(x, y)
            states.append(v)
            row.append(v)
        nodes.append(row)
        logits.append(model.head(states[s.root]))
    return torch.stack(logits), nodes


def reference_minimise(delta, start: int, output):
    """Moore's partition refinement (one pass per distinguishing suffix length), the
    implementation monoidlab.algebra.automaton.minimise had before Hopcroft's algorithm: same outputs,
    ``(delta, start, output, old_to_new)``, states numbered breadth-first from the start."""
    import numpy as np

    delta, output = np.asarray(delta, np.int64), np.asarray(output, np.int64)
    n, k = delta.shape
    seen = np.zeros(n, bool)
    seen[start] = True
    frontier = np.array([start])
    while frontier.size:
        nxt = np.unique(delta[frontier].ravel())
        nxt = nxt[~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    reach = np.flatnonzero(seen)
    _, block = np.unique(output[reach], return_inverse=True)
    index = np.full(n, -1)
    index[reach] = np.arange(reach.size)
    succ = index[delta[reach]]
    n_blocks = block.max() + 1
    while True:
        sig = np.concatenate([block[:, None], block[succ]], axis=1)
        _, new_block = np.unique(sig, axis=0, return_inverse=True)
        new_block = new_block.ravel()
        if new_block.max() + 1 == n_blocks:
            break
        block, n_blocks = new_block, new_block.max() + 1
    qdelta = np.empty((n_blocks, k), np.int64)
    qdelta[block] = block[succ]
    qout = np.empty(n_blocks, np.int64)
    qout[block] = output[reach]
    order = [block[index[start]]]
    pos = {order[0]: 0}
    i = 0
    while i < len(order):
        for b in qdelta[order[i]]:
            if b not in pos:
                pos[int(b)] = len(order)
                order.append(int(b))
        i += 1
    perm = np.array(order)
    rank = np.empty(n_blocks, np.int64)
    rank[perm] = np.arange(n_blocks)
    old_to_new = np.full(n, -1, np.int64)
    old_to_new[reach] = rank[block]
    return rank[qdelta[perm]], 0, qout[perm], old_to_new


def task_accuracy(pred, batch):
    """Per-string accuracy of a tape task, by definition: right unmasked positions over the
    unmasked positions (``pred``: class ids (B, m) or logits (B, m, C))."""
    pred = np.asarray(pred)
    if pred.ndim == 3:
        pred = pred.argmax(-1)
    assert pred.shape == batch.targets.shape
    correct = (pred == batch.targets) & batch.mask
    return correct.sum(1) / batch.mask.sum(1)


def task_batch_accuracy(pred, batch):
    """The reference script's scalar over a batch: right unmasked tokens over unmasked ones."""
    pred = np.asarray(pred)
    if pred.ndim == 3:
        pred = pred.argmax(-1)
    correct = (pred == batch.targets) & batch.mask
    return float(correct.sum() / batch.mask.sum())
