"""Where a strictly evaluated MLP-LDRU run goes wrong: its wrong (and nearly wrong) test strings,
the tree node to blame for each, and how often that node's EC occurs per tree level in training
and in the test strings (configs/blame.toml).

    monoidlab study blame [--runs RUN[,RUN...]]   # blames the runs the ledger lacks
    monoidlab study blame --table                 # the report of every run, from the ledger

Each run is a run folder of `monoidlab train` / a sweep (config.json and best.pt, else
checkpoint.pt), MLP-LDRU on a language. Three parts, all on one thread, with the config's
``[blame]`` settings:

1. Margins: every test string of the run (its test lengths, kinds and seed: the very strings of
   its results.json) is scored; the margin is the true class's logit minus the best other one.
   Strings with margin < ``margin`` are listed (negative: wrong).
2. Blame, per listed string: every internal node of its tree is replaced in turn by the mean
   state of its EC at its tree level (over the nodes of 16 test strings per 7th length) and the
   tree above it recomputed with the model's own operator (``apply_operator``). The nodes whose
   replacement raises the margin most carry the error (``top`` of them listed); a node whose
   replacement changes little computed its state from typical children.
3. EC shares per level: for the (``ecs``) ECs of the nodes listed in 2., the share of nodes in
   that EC at each tree level, in the run's training batches (``batches`` batches as the trainer
   draws them: its sampler, lengths and offsets) and in the test strings.

One ledger row per run (docs/data/blame.jsonl); measured on tomita-3: docs/results.md quotes the
report. :func:`row_of` is the wrong-string row of a run folder that ``tools/bench_run_errors.py``
tabulates.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from monoidlab.errors import ConfigError
from monoidlab.studies.fresh_test import run_folders, run_id
from monoidlab.studies.runner import Study, StudyConfig, wrong_strings

LEDGER = "docs/data/blame.jsonl"
SETTINGS = ("margin", "batches", "top", "ecs")


def row_of(run: Path) -> dict:
    """A finished run folder's wrong test strings, validation minima and training seconds (an
    optional variant.txt labels it)."""
    results = json.loads((run / "results.json").read_text(encoding="utf-8"))
    wrong, scored = wrong_strings(results)
    vals = [json.loads(ln) for ln in (run / "metrics.jsonl").read_text(
        encoding="utf-8").splitlines() if '"val_min_accuracy"' in ln]
    label = (run / "variant.txt").read_text(encoding="utf-8").strip() \
        if (run / "variant.txt").is_file() else ""
    return {"run": run.name, "variant": label, "wrong": wrong, "scored": scored,
            "solved": results["solved"], "val_min": [v["val_min_accuracy"] for v in vals],
            "train_s": results["train_seconds"]}


# ------------------------------------------------------------------------------ the blame
def margins_of(model: Any, problem: Any, cfg: Any, margin: float) -> tuple[list, int]:
    """Every test string's margin; the strings below ``margin`` (tokens, L, margin, y, kind)."""
    import torch

    low, n = [], 0
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(cfg.test_lengths):
            b = problem.kind_batch(problem.eval_rng(cfg.seed, kind, int(L)), int(L),
                                   cfg.test_samples, kind)
            logits = model(torch.as_tensor(b["tokens"]), torch.as_tensor(b["lengths"])).float()
            y = torch.as_tensor(b["targets"])
            own = logits.gather(1, y[:, None])[:, 0]
            other = logits.scatter(1, y[:, None], -torch.inf).max(1).values
            m = (own - other).numpy()
            n += len(m)
            low += [(b["tokens"][i, :L].copy(), int(L), float(m[i]), int(y[i]), kind)
                    for i in np.flatnonzero(m < margin)]
    return low, n


def tree_states(model: Any, tokens: np.ndarray) -> tuple[dict, int]:
    """{(level, index): state} of one string's balanced tree; an all-padding child is skipped
    (identity padding) or is the padding state (learned padding)."""
    import torch

    L = len(tokens)
    M = 1 << int(np.ceil(np.log2(L))) if L > 1 else 1
    leaves = model.embed(torch.as_tensor(tokens)[None])[0]
    states = {(0, j): leaves[j] for j in range(L)}
    pad = model.padding_state()
    if pad is not None:
        states.update({(0, j): pad for j in range(L, M)})
    k, width = 0, M if pad is not None else L
    while (1 << k) < M:
        k, width = k + 1, (width + 1) // 2
        for j in range(width):
            states[(k, j)] = _node(model, states, k, j)
    return states, k


def _node(model: Any, states: dict, k: int, j: int) -> Any:
    a: Any = states.get((k - 1, 2 * j))
    b: Any = states.get((k - 1, 2 * j + 1))
    return a if b is None else model.apply_operator(a[None], b[None])[0]


def blame(model: Any, tokens: np.ndarray, y: int, centroids: dict, monoid: Any) -> list:
    """(margin gain, level, span, EC) of every internal node, largest gain first."""
    import torch

    from monoidlab.coverage.compositions import node_labels

    L = len(tokens)
    states, top = tree_states(model, tokens)

    def margin(root: Any) -> float:
        logits = model.state_logits(root[None])[0]
        return float(logits[y] - torch.cat([logits[:y], logits[y + 1:]]).max())

    base = margin(states[(top, 0)])
    lab = node_labels(monoid, tokens[None], np.array([L]))
    ec_of = {(int(s), int(e)): int(ec) for (s, e), ec in zip(lab.span, lab.node)}
    out = []
    for (k, j) in states:
        span = (j << k, min((j + 1) << k, L))
        if k == 0 or k == top or span[0] >= L or span not in ec_of:
            continue
        ec = ec_of[span]
        c = centroids.get((ec, k))
        if c is None:
            continue
        changed = dict(states)
        changed[(k, j)] = c
        kk, jj = k, j
        while kk < top:
            kk, jj = kk + 1, jj >> 1
            changed[(kk, jj)] = _node(model, changed, kk, jj)
        out.append((margin(changed[(top, 0)]) - base, k, span, ec))
    return sorted(out, key=lambda r: -r[0])


def level_shares(monoid: Any, tokens: np.ndarray, lengths: np.ndarray, offsets: Any,
                 ecs: list[int]) -> dict:
    from monoidlab.coverage.compositions import node_labels

    lab = node_labels(monoid, tokens, lengths, offsets=offsets)
    real = lab.span[:, 1] > lab.span[:, 0]
    lv, node = lab.level[real], lab.node[real]
    return {int(k): (int((lv == k).sum()), {e: float((node[lv == k] == e).mean()) for e in ecs})
            for k in np.unique(lv)}


def _share(share: float | None) -> str:
    return "-" if share is None else f"{share:.4f}"[1:]


def blame_run(run: Path, margin: float = 1.0, batches: int = 400, top: int = 3,
              ecs: int = 6) -> dict:
    """The three parts for one run folder, as plain data (a ledger row without its id)."""
    from monoidlab._util import inference
    from monoidlab.errors import MonoidlabError
    from monoidlab.training.parse import config_from_dict

    cfg = config_from_dict(json.loads((run / "config.json").read_text(encoding="utf-8")),
                           str(run / "config.json"), saved=True)
    if cfg.model != "mlp-ldru" or cfg.language is None:
        raise ConfigError(f"{run}: blame needs an mlp-ldru run on a language, not {cfg.model} / "
                          f"{cfg.task}")
    try:
        with inference():  # inference only, one thread; the caller's settings come back
            return _blame_run(run, margin, batches, top, ecs)
    except MonoidlabError as e:
        raise ConfigError(f"{run}: {e}") from None


def _blame_run(run: Path, margin: float, batches: int, top: int, n_ecs: int) -> dict:
    import torch

    from monoidlab.probing.embeddings import node_embeddings
    from monoidlab.training.loop import training_batch
    from monoidlab.training.trainer import load_checkpoint

    weights = run / "best.pt" if (run / "best.pt").is_file() else run / "checkpoint.pt"
    # the run's own model, options and language copy, as its results were measured
    model, cfg, problem, _ = load_checkpoint(run)
    lang = problem.language
    monoid = lang.monoid()
    model.eval()

    low, n = margins_of(model, problem, cfg, margin)
    out: dict[str, Any] = {"language": cfg.language, "weights": str(weights), "strings": n,
                           "wrong": sum(m < 0 for _, _, m, _, _ in low), "margin": margin,
                           "listed": [], "ecs": [], "levels": []}

    # centroids of every (EC, level) over reference test strings
    toks, lens = [], []
    for kind in problem.check_kinds(cfg.eval_kinds):
        for L in problem.lengths(cfg.test_lengths)[::7]:
            b = problem.kind_batch(problem.eval_rng(cfg.seed + 1, kind, int(L)), int(L), 16, kind)
            toks.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, cfg.test_lengths.stop - L))))
            lens.append(b["lengths"])
    ref = node_embeddings(model, lang, np.concatenate(toks), np.concatenate(lens))
    groups = ref.meta.groupby(["ec", "level"]).indices
    centroids = {(int(e), int(k)): torch.as_tensor(ref.X[i].mean(0)) for (e, k), i in
                 groups.items()}

    blamed: dict[int, int] = {}
    for tokens, L, m, y, kind in low:
        ranks = blame(model, tokens, y, centroids, monoid)
        out["listed"].append({"kind": kind, "length": L, "class": lang.classes[y], "margin": m,
                              "gains": [[gain, k, s, e, ec, monoid.elements[ec].tolist()]
                                        for gain, k, (s, e), ec in ranks[:top]]})
        for r in ranks[:top]:
            blamed[r[3]] = blamed.get(r[3], 0) + 1
    if not blamed:
        return out

    ecs = sorted(blamed, key=lambda e: -blamed[e])[:n_ecs]
    tt, tl, to = [], [], []
    train_lengths = problem.lengths(cfg.train_lengths)
    for step in range(batches):
        L, b = training_batch(cfg, problem, train_lengths, step)
        tt.append(np.pad(b["tokens"][:, :L], ((0, 0), (0, train_lengths.max() - L))))
        tl.append(b["lengths"])
        to.append(b.get("offsets", np.zeros_like(b["lengths"])))
    train = level_shares(monoid, np.concatenate(tt), np.concatenate(tl), np.concatenate(to), ecs)
    test = level_shares(monoid, np.concatenate(toks), np.concatenate(lens), None, ecs)
    levels = [k for k in sorted(set(train) | set(test)) if k >= 2]
    out["levels"] = levels
    out["ecs"] = [{"ec": e, "image": monoid.elements[e].tolist(), "listed": blamed[e],
                   "shares": [[train[k][1][e] if k in train else None,
                               test[k][1][e] if k in test else None] for k in levels]}
                  for e in ecs]
    return out


def report(row: dict) -> str:
    """The report of one run, as the blame prints it."""
    lines = [f"{row['language']}, {row['weights']}: {row['strings']} test strings, "
             f"{row['wrong']} wrong, {len(row['listed'])} with margin < {row['margin']}"]
    for s in row["listed"]:
        lines.append(f"  {s['kind']} L={s['length']} class {s['class']} margin "
                     f"{s['margin']:+.2f}; largest gains:")
        for gain, k, a, b, ec, image in s["gains"]:
            lines.append(f"    {gain:+6.2f}  level {k} span {a}..{b} EC {ec} (states -> "
                         f"{image})")
    if row["ecs"]:
        lines.append(f"Share of the nodes of each tree level in an EC, training batches / test "
                     f"strings (the {len(row['ecs'])} ECs listed most often above; '-': no such "
                     "level):")
        lines.append("  EC (states ->)      listed  "
                     + " ".join(f"{'level ' + str(k):>13}" for k in row["levels"]))
        for e in row["ecs"]:
            cells = [f"{_share(tr)}/{_share(te)}" for tr, te in e["shares"]]
            lines.append(f"  {e['ec']:>2} {str(e['image']):<17} {e['listed']:>4}x  "
                         + " ".join(f"{c:>13}" for c in cells))
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    settings = data.get("blame")
    if not isinstance(settings, dict) or any(k not in settings for k in SETTINGS):
        raise ConfigError(f"{path}: a blame study needs [blame] with {', '.join(SETTINGS)}")
    return data.get("study", {}).get("ledger", LEDGER), "runs"  # out: unused


def _plan(config: StudyConfig, ledger: dict, runs: str | None = None) -> list[dict]:
    """Every run folder of the config (or of ``runs``), in order of their paths."""
    return [{"id": run_id(config, r), "folder": str(r)}
            for r in run_folders(config, runs, finished=False)]


def run_one(run: dict, config: StudyConfig) -> dict:
    """Blame one run: its ledger row."""
    s = config.data["blame"]
    t0 = time.perf_counter()
    row = blame_run(Path(run["folder"]), float(s["margin"]), int(s["batches"]), int(s["top"]),
                    int(s["ecs"]))
    print(report(row), flush=True)
    return {"id": run["id"], **row, "wall_s": round(time.perf_counter() - t0, 1)}


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    if not ledger:
        raise ConfigError(f"{config.ledger}: no run blamed yet (`monoidlab study blame --runs "
                          "RUN` blames one)")
    text = "\n\n".join(f"{r['id']} ({r['wall_s']:.0f} s):\n" + report(r)
                       for _, r in sorted(ledger.items()))
    return {config.data.get("study", {}).get("section", "blame"): "```\n" + text + "\n```"}


STUDY = Study(name="blame", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="blame.toml", options=("runs",),
              summary="the test strings a run gets wrong and the tree nodes to blame")
