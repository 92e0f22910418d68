"""Does a strictly solved MLP-LDRU compute the monoid, or only its balanced bracketing?
(configs/bracketing.toml; docs/results.md, section "ldru21 bracketing")

    monoidlab study bracketing [--runs DIR[,DIR...]] [--workers 2]   # measures what the ledger lacks
    monoidlab study bracketing --table [--write-docs]

With ``padding = "identity"`` a node with one empty side passes the other side's state up
unchanged, so placing a string's symbols at increasing positions of a longer buffer (identity
everywhere else) computes *the same string* under another bracketing: the one the balanced
tree of the buffer induces. A model whose node states represent the monoid's elements gives
the same answer under every bracketing (the product is associative); a model that learned a
function of the balanced bracketing alone need not. This is the associativity probe
(docs/probing.md) asked at the level of whole strings, on fresh strings of the test's
distribution (the test's kinds and lengths, another seed).

For each run (an mlp-ldru run on a language with identity padding; a folder holding run folders,
a sweep's ``out``, stands for its ``*__mlp-ldru__*`` runs), for each test kind and every length
of the config's ``lengths``, ``samples`` strings of the test's distribution are scored:

- *balanced*: the model's own forward (offset 0, the strict test's bracketing);
- *random*: the symbols at uniformly random increasing positions of a ``buffer`` buffer
  (a fresh bracketing per string); the tree is recomputed with the model's public
  ``embed`` / ``apply_operator`` / ``state_logits``. Its contiguous placement reproduces the
  forward (checked on every batch, to 1e-4).

One ledger row per run (docs/data/ldru21-bracketing.jsonl): per kind the accuracy of each at
every length, beside what a majority-class and a count-only model get on the same strings; the
table gives their minimum and mean over lengths; each run's lines are printed as it ends, and the
section shows the rows of the config's own ``runs`` (``--runs`` elsewhere: printed and kept in
the ledger, not shown). Inference only, one thread. The committed
section was written by the script this study replaces, from run folders the repository does not
hold; its ledger starts empty.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.errors import ConfigError, InputError
from monoidlab.studies.fresh_test import command_line, configured, run_folders, run_id
from monoidlab.studies.runner import Study, StudyConfig

LEDGER = "docs/data/ldru21-bracketing.jsonl"
SECTION = "ldru21 bracketing"


def random_positions(rng: np.random.Generator, n: int, length: int, buffer: int) -> np.ndarray:
    """(n, length) increasing positions in 0..buffer-1, uniformly over all such choices.

    >>> random_positions(np.random.default_rng(0), 2, 3, 8).shape
    (2, 3)
    """
    if buffer < length:
        raise InputError(f"buffer {buffer} < string length {length}")
    return np.sort(rng.random((n, buffer)).argsort(axis=1)[:, :length], axis=1)


def logits_at_positions(model: Any, tokens: Any, positions: np.ndarray, buffer: int) -> Any:
    """Logits of strings (n, L) whose symbols sit at ``positions`` of a ``buffer`` buffer of
    identity padding; the balanced tree of the buffer, one level at a time over the batch.

    A node with both children real applies the model's operator, one with a single real child
    passes it up, one with none stays empty.
    """
    import torch

    n, L = tokens.shape
    leaves = model.embed(tokens)  # (n, L, d)
    width = 1 << max(0, int(np.ceil(np.log2(buffer))))
    states = leaves.new_zeros((n, width, leaves.shape[-1]))
    real = torch.zeros((n, width), dtype=torch.bool)
    rows = torch.arange(n)[:, None]
    pos = torch.as_tensor(positions)
    states[rows, pos] = leaves
    real[rows, pos] = True
    while states.shape[1] > 1:
        a, b = states[:, 0::2], states[:, 1::2]
        ra, rb = real[:, 0::2], real[:, 1::2]
        out = torch.where(ra[..., None], a, b)  # one real side (or none): pass it up
        both = ra & rb
        if both.any():
            out[both] = model.apply_operator(a[both], b[both])
        states, real = out, ra | rb
    return model.state_logits(states[:, 0])


def measure(run: Path, lengths: np.ndarray, samples: int, buffer: int, seed: int = 0) -> dict:
    """{kind: (balanced accuracies, random accuracies, (n, 2) majority / count-only
    accuracies)} over ``lengths`` (the lengths with strings of that kind)."""
    import torch

    from monoidlab._util import inference
    from monoidlab.errors import MonoidlabError
    from monoidlab.evaluation import count_baseline, majority_baseline
    from monoidlab.training.parse import config_from_dict
    from monoidlab.training.trainer import load_checkpoint

    cfg = config_from_dict(json.loads((run / "config.json").read_text(encoding="utf-8")),
                           str(run / "config.json"), saved=True)
    if cfg.model != "mlp-ldru" or cfg.language is None:
        raise ConfigError(f"{run}: needs an mlp-ldru run on a language, not {cfg.model}")
    if cfg.padding != "identity":
        raise ConfigError(f"{run}: needs model_options.padding = 'identity' (with a learned "
                          "padding another placement is another string)")
    try:  # the weights the run's results were measured on, checked as checkpoints are
        model, cfg, problem, _ = load_checkpoint(run)
    except MonoidlabError as e:
        raise ConfigError(f"{run}: {e}") from None
    model.eval()
    lengths = problem.lengths(lengths)
    rng = np.random.default_rng(seed)
    out = {}
    with inference():  # one thread, no gradients; the caller's settings come back
        for kind in problem.check_kinds(cfg.eval_kinds):
            bal, rnd, maj = [], [], []
            for L in lengths:
                # the test's own distribution, with fresh strings (seed + 1: not the test's)
                b = problem.kind_batch(problem.eval_rng(cfg.seed + 1, kind, int(L)), int(L),
                                       samples, kind)
                if not len(b["targets"]):  # no string of this kind at this length (odd Dyck)
                    continue
                t = torch.as_tensor(b["tokens"][:, :L])
                y = torch.as_tensor(b["targets"])
                f0 = model(t, torch.as_tensor(b["lengths"]))
                same = logits_at_positions(model, t, np.tile(np.arange(L), (len(t), 1)), int(L))
                if not torch.allclose(same, f0, atol=1e-4):
                    raise ConfigError(f"{run}: the recomputed tree differs from the forward at "
                                      f"L={L} by {float((same - f0).abs().max()):.2e}")
                fr = logits_at_positions(model, t, random_positions(rng, len(t), int(L), buffer),
                                         buffer)
                bal.append(float((f0.argmax(1) == y).float().mean()))
                rnd.append(float((fr.argmax(1) == y).float().mean()))
                maj.append((majority_baseline(b["targets"]),
                            count_baseline(b["tokens"][:, :L], b["lengths"], b["targets"],
                                           problem.vocab_size)))
            if bal:  # a kind the language has no strings of (prefix-4-4's near_miss) is left out
                out[kind] = (np.array(bal), np.array(rnd), np.array(maj))
    return out


def table(rows: list[tuple[str, dict]]) -> str:
    head = ("| run | kind | balanced bracketing: min / mean | random bracketings: min / mean "
            "| majority / count-only (mean) |\n|---|---|---|---|---|\n")
    lines = []
    for name, res in rows:
        for kind, (bal, rnd, maj) in res.items():
            lines.append(f"| {name} | {kind} | {bal.min():.3f} / {bal.mean():.3f} | "
                         f"{rnd.min():.3f} / {rnd.mean():.3f} | {maj[:, 0].mean():.3f} / "
                         f"{maj[:, 1].mean():.3f} |")
    return head + "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ the study
def _settings(config: StudyConfig) -> dict:
    return config.data["bracketing"]


def _lengths(path: Path | str, settings: dict) -> np.ndarray:
    from monoidlab.errors import InputError
    from monoidlab.geometry import length_array

    try:
        lengths = length_array(settings["lengths"], "lengths")
    except InputError as e:
        raise ConfigError(f"{path}: [bracketing] {e}") from None
    if lengths.max() > settings["buffer"]:
        raise ConfigError(f"{path}: [bracketing] lengths reach {lengths.max()} > buffer "
                          f"{settings['buffer']}")
    return lengths


def _read(path: Path, data: dict) -> tuple[str, str]:
    settings = data.get("bracketing")
    if not isinstance(settings, dict) or not isinstance(data.get("study"), dict) \
            or any(k not in settings for k in ("lengths", "samples", "buffer", "seed")):
        raise ConfigError(f"{path}: a bracketing study needs [study] and [bracketing] with "
                          "lengths, samples, buffer and seed")
    _lengths(path, settings)
    return data["study"].get("ledger", LEDGER), "runs"  # out: unused (nothing is trained)


def _plan(config: StudyConfig, ledger: dict, runs: str | None = None) -> list[dict]:
    """Every run folder of the config (or of ``runs``), in order of their paths."""
    return [{"id": run_id(config, r), "folder": str(r)}
            for r in run_folders(config, runs, "*__mlp-ldru__*", finished=False)]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Measure one run: its ledger row (per kind, the accuracies at every scored length)."""
    s = _settings(config)
    t0 = time.perf_counter()
    res = measure(Path(run["folder"]), _lengths(config.path, s), s["samples"], s["buffer"],
                  s["seed"])
    kinds = {k: {"balanced": bal.tolist(), "random": rnd.tolist(),
                 "majority": maj[:, 0].tolist(), "count_only": maj[:, 1].tolist()}
             for k, (bal, rnd, maj) in res.items()}
    name = Path(run["folder"]).name.split("__")[0]
    print("\n".join(table([(name, res)]).splitlines()[2:]), flush=True)  # its rows, as it ends
    return {"id": run["id"], "run": name, "kinds": kinds,
            "wall_s": round(time.perf_counter() - t0, 1)}


def section(rows: list[dict], settings: dict, command: str) -> str:
    """The section (markdown): the table and its footnote."""
    done = [(r["run"], {k: (np.array(v["balanced"]), np.array(v["random"]),
                            np.c_[v["majority"], v["count_only"]])
                        for k, v in r["kinds"].items()}) for r in rows]
    n = len(_lengths("bracketing", settings))
    foot = (f"Lengths {settings['lengths']} ({n} lengths), {settings['samples']} fresh strings "
            f"per length and kind (the test's distribution, not its strings), random placements "
            f"in a buffer of {settings['buffer']}, seed {settings['seed']}; "
            f"{sum(r['wall_s'] for r in rows):.0f} s on one thread.")
    return ("### The same strings under random bracketings\n\n" + command + "\n\n"
            + table(done) + "\n" + foot)


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    rows = configured(config, ledger)
    if not rows:
        raise ConfigError(f"{config.ledger}: no run of the config's runs measured yet "
                          "(`monoidlab study bracketing` measures them)")
    return {config.data["study"].get("section", SECTION):
            section(rows, _settings(config),
                    command_line("bracketing", config, "bracketing.toml"))}


STUDY = Study(name="bracketing", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="bracketing.toml", options=("runs",),
              summary="solved MLP-LDRU models under random bracketings of the same strings")
