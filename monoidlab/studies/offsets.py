"""Coverage-driven training: do random left offsets let short strings cover what long test
strings need? (configs/offsets-1000.toml, configs/offsets-3000.toml; docs/results.md, sections
"offsets 1000 steps" and "offsets 3000 steps")

    monoidlab study offsets [--config configs/offsets-3000.toml] [--workers 2]
    monoidlab study offsets --table [--write-docs]

1. Predicted support lengths (the smallest maximum training length whose compositions cover
   every composition of test lengths 41..500, ``balanced`` schedule) without and with random
   training offsets, for every ``ldru21`` language: the ledger's row ``_support``, the first run
   of the plan (``monoidlab min-length --suite ldru21 --test 41:500 [--offsets random]`` gives
   the same table).
2. MLP-LDRU trained at maximum training length 40 without offsets, with random offsets, and
   (where the prediction exceeds 40) without offsets at the predicted length; same steps and
   seeds (the config's ``[train]``); strict evaluation on test lengths 41..500
   (docs/evaluation.md): the minimum accuracy per test kind over the scored (even) lengths, and
   the papers' balanced score. Each run trains into ``out/<language>__<L40|off|L<p>>__s<seed>``
   (resumable); one ledger row per finished run.

The section "offsets summary" of docs/results.md is prose written over the 3000-step runs, not
generated. The committed sections were written by the script this study replaces, from run
folders the repository does not hold: the ledgers start empty; their support tables are
computed from the languages alone, and a test checks them against the committed ones.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

from monoidlab.errors import ConfigError
from monoidlab.studies.fresh_test import command_line
from monoidlab.studies.runner import Study, StudyConfig, train_or_resume

SUPPORT = "_support"  # the ledger row of the support table (not a training run)
TRAIN_KEYS = ("steps", "batch_size", "lr", "d", "dropout", "test_lengths", "test_samples",
              "device")
KINDS = ("paper", "near_miss", "ec_stratified")


@functools.lru_cache(maxsize=64)
def support_row(name: str, test: str = "41:500") -> dict[str, Any]:
    """One language's row of the support table: needed compositions, the support length
    without and with random offsets.

    >>> support_row("parity")["support_length_offsets"]
    2
    """
    import monoidlab as ml
    from monoidlab.coverage.min_length import min_training_length
    from monoidlab.geometry import Lengths
    from monoidlab.sublanguage import resolve_within

    lang = ml.load_language(name)
    within = resolve_within(lang, "auto")
    lengths = Lengths.parse(test, "test")
    t0 = time.time()
    plain = min_training_length(lang, lengths, within=within)
    shifted = min_training_length(lang, lengths, within=within, offsets="random")
    return {"name": name, "needed": plain.needed, "support_length": plain.support_length,
            "support_length_offsets": shifted.support_length,
            "seconds": round(time.time() - t0, 2)}


def support_table(test: str = "41:500", languages: list[str] | None = None) -> list[dict]:
    """The support table of ``languages`` (default: the ``ldru21`` suite)."""
    import monoidlab as ml

    return [support_row(name, test) for name in (languages or ml.suite("ldru21"))]


def conditions(predicted: int | None) -> list[tuple[str, int, str]]:
    """(label, maximum training length, offsets) of each condition of a language.

    >>> [c[0] for c in conditions(44)]
    ['L<=40, offset 0', 'L<=40, random offsets', 'L<=44 (predicted), offset 0']
    """
    out = [("L<=40, offset 0", 40, "none"), ("L<=40, random offsets", 40, "random")]
    if predicted and predicted > 40:
        out.append((f"L<={predicted} (predicted), offset 0", predicted, "none"))
    return out


def support_text(table: list[dict], seconds: float) -> list[str]:
    """The support part of a section (markdown lines)."""
    lines = ["| language | needed compositions | support length | with random offsets |",
             "|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['name']} | {r['needed']} | {r['support_length']} | "
                     f"{r['support_length_offsets']} |")
    return lines + ["", f"(table computed in {seconds:.1f} s)", ""]


def section(support: dict, rows: list[dict], train: dict, seeds: list[int],
            command: str) -> str:
    """The section (markdown): the support table, then the training runs recorded so far."""
    test = train["test_lengths"]
    lines = [f"## Coverage-driven training: random left offsets ({train['steps']} steps"
             f"{', seeds ' + ' '.join(map(str, seeds)) if len(seeds) > 1 else ''})", "",
             "Predicted support length = smallest maximum training length L such that training "
             f"lengths 1..L show every EC composition that test lengths {test.replace(':', '..')} "
             "need (`balanced` "
             "schedule, test strings at offset 0). With offsets, each training string of length "
             "n sits at a left offset r drawn uniformly from 0..B−n, B the next power of two ≥ 2n. "
             "`modular-arithmetic` is restricted to well-formed expressions.", "",
             f"Produced by {command} (one CLI call gives the same table: "
             f"`monoidlab min-length --suite ldru21 --test {test} --padding learned "
             "[--offsets random]`).", "", *support_text(support["table"], support["seconds"])]
    if rows:
        lines += ["### Training runs", "",
                  f"MLP-LDRU (d={train['d']}, dropout {train['dropout']}), {train['steps']} "
                  f"steps, batch {train['batch_size']}, Adam lr {train['lr']}, clip 1.0, "
                  "class-balanced sampler, one length per batch; strict evaluation on lengths "
                  f"{test.replace(':', '..')} with {train['test_samples']} "
                  "strings per length and kind "
                  "(docs/evaluation.md): minimum accuracy over the scored lengths per kind (odd "
                  "lengths of a Dyck language have one class and are not scored), solved = all "
                  f">= 0.99; bal. score = the papers' mean over lengths; seeds {seeds}. The "
                  "authors train 1M steps for D_n (n ≥ 4) at lr 1e-4: these reduced CPU runs "
                  "test the direction of the effect, not the paper's numbers.", "",
                  "| language | condition | seed | solved | min balanced | min near_miss | "
                  "min ec_stratified | bal. score | wall s |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['language']} | {r['condition']} | {r['seed']} | "
                         f"{'**yes**' if r['solved'] else 'no'} | {r['min_paper']:.3f} | "
                         f"{r['min_near_miss']:.3f} | {r['min_ec_stratified']:.3f} | "
                         f"{r['paper_score']:.3f} | {r['wall_s']} |")
        lines += ["", f"(training wall time {sum(r['wall_s'] for r in rows):.0f} s, the runs' "
                  f"own times summed, on `{train['device']}`)", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------ the study
def _read(path: Path, data: dict) -> tuple[str, str]:
    study, train = data.get("study"), data.get("train")
    if not isinstance(study, dict) or not isinstance(train, dict):
        raise ConfigError(f"{path}: an offsets study needs the tables [study] and [train]")
    missing = [k for k in ("languages", "seeds", "ledger", "out", "section") if k not in study]
    missing += [f"train.{k}" for k in TRAIN_KEYS if k not in train]
    if missing:
        raise ConfigError(f"{path}: an offsets study is missing {', '.join(missing)}")
    return study["ledger"], study["out"]


def _plan(config: StudyConfig, ledger: dict) -> list[dict]:
    """The support table, then every language × condition × seed of the config, in order."""
    study = config.data["study"]
    known = ledger.get(SUPPORT, {}).get("table")
    pred = {r["name"]: r for r in known} if known else {
        r["name"]: r for r in support_table(config.data["train"]["test_lengths"],
                                            study["languages"])}
    runs: list[dict] = [{"id": SUPPORT}]
    for name in study["languages"]:
        p = pred[name]["support_length"]
        for label, max_len, pad in conditions(p):
            for seed in study["seeds"]:
                run_id = f"{name}__{'off' if pad == 'random' else 'L' + str(max_len)}__s{seed}"
                runs.append({"id": run_id, "language": name, "condition": label, "seed": seed,
                             "max_length": max_len, "offsets": pad, "predicted": p,
                             "predicted_offsets": pred[name]["support_length_offsets"]})
    return runs


def run_config(run: dict, train: dict) -> Any:
    """The run's training config."""
    from monoidlab.training.parse import config_from_dict

    return config_from_dict(dict(
        language=run["language"], model="mlp-ldru", steps=train["steps"],
        batch_size=train["batch_size"], lr=train["lr"],
        model_options={"d": train["d"], "dropout": train["dropout"]},
        train_lengths=f"1:{run['max_length']}", test_lengths=train["test_lengths"],
        test_samples=train["test_samples"], sampler="balanced", offsets=run["offsets"],
        seed=run["seed"], checkpoint_every=10**9, log_every=100, device=train["device"],
        threads=1), run["id"])


def run_one(run: dict, config: StudyConfig) -> dict:
    """The support table (row ``_support``) or one training run: its ledger row."""
    if run["id"] == SUPPORT:
        t0 = time.time()
        table = support_table(config.data["train"]["test_lengths"])
        return {"id": SUPPORT, "table": table, "seconds": round(time.time() - t0, 1)}
    t0 = time.time()
    res = train_or_resume(run_config(run, config.data["train"]), config.out / run["id"])
    mins = res["min_accuracy"]
    return {"id": run["id"], **{k: run[k] for k in ("language", "condition", "seed",
                                                    "predicted", "predicted_offsets")},
            "paper_score": res["paper_score"], "solved": res["solved"],
            "wall_s": round(time.time() - t0, 1), **{f"min_{k}": v for k, v in mins.items()},
            "acc_500": {k: v.get(500, v.get("500")) for k, v in res["accuracy"].items()}}


def _order(config: StudyConfig, row: dict) -> tuple:
    names = config.data["study"]["languages"]
    cond = 1 if "random" in row["condition"] else 2 if "predicted" in row["condition"] else 0
    return (names.index(row["language"]) if row["language"] in names else len(names), cond,
            row["seed"])


def _sections(config: StudyConfig, ledger: dict) -> dict[str, str]:
    if SUPPORT not in ledger:
        raise ConfigError(f"{config.ledger}: no support table yet (`monoidlab study offsets` "
                          "computes it first)")
    rows = sorted((r for k, r in ledger.items() if k != SUPPORT),
                  key=lambda r: _order(config, r))
    study = config.data["study"]
    return {study["section"]: section(ledger[SUPPORT], rows, config.data["train"],
                                      study["seeds"],
                                      command_line("offsets", config, "offsets-1000.toml"))}


STUDY = Study(name="offsets", plan=_plan, run=run_one, sections=_sections, read=_read,
              default_config="offsets-1000.toml",
              summary="random left offsets against the predicted support lengths")
