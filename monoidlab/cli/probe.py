"""CLI command ``probe``: node embeddings vs true ECs and learned associativity of a checkpoint.

``monoidlab probe CHECKPOINT [--n-strings N] [--lengths A:B] [--out DIR] [--json] [--no-umap]``
writes ``probe.json`` and the figures (contingency heatmaps, UMAP, associativity histograms)
to ``--out`` (default: ``probe/`` next to the checkpoint), for the trained model and the same
model at initialisation. ``--extract automaton,monoid`` adds what the model computes: the
automaton L* extracts from it and the monoid its operator's table forms, each compared with
the true one (``probe.json`` key ``extraction``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monoidlab._paths import check_output_dir, child_dir, ensure_dir, refuse_clobber
from monoidlab.cli._common import (
    UsageError,
    check_work,
    command,
    emit,
    format_table,
    json_default,
    parse_lengths,
    positive,
    save_figure,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COMMANDS"]


def _out_dir(checkpoint: str, out: str | None) -> Path:
    """``--out`` as given, else ``probe/`` beside the checkpoint: a folder monoidlab names
    itself, so never a link (a downloaded run folder could point it anywhere)."""
    if out:
        return Path(out)
    p = Path(checkpoint)
    return child_dir(p if p.is_dir() else p.parent, "probe", "probe folder")


def _table(m: dict[str, Any]) -> str:
    from monoidlab.probing import summary_tables

    t = summary_tables(m)
    lines = [f"{m['model']} on {m['language']} after {m['steps']} steps",
             m["heldout"]["description"], "",
             "cluster agreement (true EC vs clusters of the node embeddings)",
             format_table(t["agreement"], ["model", "clustering", "ARI", "NMI", "V", "purity"]),
             "", "linear probe (EC from the embedding, held-out strings' nodes; chance = the "
             "most frequent EC)",
             format_table(t["probe"], ["model", "accuracy", "train accuracy", "chance"])]
    if t["associativity"]:
        lines += ["", f"associativity (means): {m['triples']['description']}",
                  format_table(t["associativity"], ["model", "head_true", "head_direct",
                                                    "head_same", "probe_true", "cos",
                                                    "cos unrelated", "rel_l2", "id_rel_l2"]),
                  "head_true: the head decodes (x⊙y)⊙z and x⊙(y⊙z) both to the class of xyz; "
                  "head_direct: the model's own prediction on xyz; head_same: both bracketings "
                  "alike (a constant head scores 1); cos: the two bracketings, against roots "
                  "of unrelated triples"]
    elif "associativity" in m.get("trained", {}):
        lines += ["", f"associativity: {m['trained']['associativity'].get('skipped', '-')}"]
    return "\n".join(lines)


@command("probe", "cluster node embeddings against true ECs; associativity on held-out triples")
def cmd_probe(args: argparse.Namespace) -> None:

    from monoidlab._util import atomic_write_json
    from monoidlab.probing import probe_checkpoint
    from monoidlab.probing.probe import MAX_PROBE

    lengths = parse_lengths(args.lengths, "--lengths") if args.lengths else None
    positive(args.n_strings, "--n-strings")
    positive(args.n_triples, "--n-triples", 0)
    positive(args.max_nodes, "--max-nodes")
    for n, opt in ((args.n_strings, "--n-strings"), (args.n_triples, "--n-triples")):
        if n > MAX_PROBE:  # embeddings of every node are held in memory
            raise UsageError(f"{opt}: at most {MAX_PROBE} (probing is an analysis of a sample), "
                             f"got {n}")
    if lengths:
        check_work(lengths, 1, "--lengths")
    extract = _extractions(args.extract)
    positive(args.max_states, "--max-states")
    positive(args.max_queries, "--max-queries")
    out = check_output_dir(_out_dir(args.checkpoint, args.out))  # before the work, not after
    refuse_clobber([out / n for n in _probe_files(args)], "probe", args.overwrite)
    res = probe_checkpoint(args.checkpoint, n_strings=args.n_strings, lengths=lengths,
                           mode=args.heldout, n_triples=args.n_triples, seed=args.seed,
                           compare_init=not args.no_init, max_nodes=args.max_nodes,
                           clusterers=_clusterers(args.clusterers))
    m = res["metrics"]
    ensure_dir(out)
    m["figures"] = _figures(res, out, umap=not args.no_umap)
    texts: list[str] = []
    if extract:
        m["extraction"], texts = _extract(args, extract)
    from monoidlab.errors import MonoidlabError

    try:
        cert = _finite_certificate(args.checkpoint)
    except MonoidlabError as exc:  # a budget of the certificate: said, the probe kept
        m["certificate"] = {"subject": "model", "correct": False,
                            "verdict": f"not certified: {str(exc).splitlines()[0]}"}
        texts.append(m["certificate"]["verdict"])
    else:
        if cert is not None:  # a finite model: the exact verdict over every length
            m["certificate"] = cert.to_dict()
            texts.append(cert.text())
    atomic_write_json(out / "probe.json", m, default=json_default)
    emit(args, m, "\n\n".join([_table(m), *texts])
         + f"\n\nwrote {out}/probe.json and {len(m['figures'])} figures")


def _finite_certificate(checkpoint: str) -> Any:
    """A finite model's certificate (None for a continuous model: ``monoidlab certify`` says
    what a surrogate's would mean)."""
    from monoidlab.errors import InputError
    from monoidlab.evaluation.model_certificate import finite_table_of
    from monoidlab.probing._target import resolve_target

    try:
        target = resolve_target(checkpoint)
    except InputError:  # a task without an automaton: nothing to certify against
        return None
    if finite_table_of(target.model) is None:
        return None
    from monoidlab.probing.certify import certify

    return certify(checkpoint)


EXTRACTIONS = ("automaton", "monoid")


def _extractions(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    names = tuple(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    bad = [c for c in names if c not in EXTRACTIONS]
    if bad or not names:
        from monoidlab._suggest import did_you_mean

        hint = did_you_mean(bad[0], EXTRACTIONS) if bad else ""
        raise UsageError(f"--extract: expected a comma-separated subset of "
                         f"{','.join(EXTRACTIONS)}, got {text!r}{hint}")
    return names


def _extract(args: argparse.Namespace, which: tuple[str, ...]) -> tuple[dict[str, Any], list[str]]:
    """The extractions asked for, as JSON data and as text (a model without a binary
    operator gets the automaton only, and the reason)."""
    from monoidlab.models.protocols import OperatorModel
    from monoidlab.probing._target import resolve_target

    out: dict[str, Any] = {}
    texts = []
    if "automaton" in which:
        from monoidlab.probing.extract_automaton import extract_automaton

        a = extract_automaton(args.checkpoint, max_states=args.max_states,
                              max_queries=args.max_queries, seed=args.seed)
        out["automaton"] = a.to_dict()
        texts.append(a.text())
    if "monoid" in which:
        model = resolve_target(args.checkpoint).model
        if isinstance(model, OperatorModel):
            from monoidlab.probing.extract_monoid import extract_monoid

            r = extract_monoid(args.checkpoint, seed=args.seed)
            out["monoid"] = r.to_dict()
            texts.append(r.text())
        else:
            why = f"{type(model).__name__} has no binary operator (mlp-ldru, pr-lstm, pr-rnn do)"
            out["monoid"] = {"skipped": why}
            texts.append(f"extracted monoid: skipped, {why}")
    return out, texts


def _clusterers(text: str) -> tuple[str, ...]:
    from monoidlab.probing import CLUSTERERS

    names = tuple(c.strip() for c in text.split(",") if c.strip())
    bad = [c for c in names if c not in CLUSTERERS]
    if bad or not names:
        raise UsageError(f"--clusterers: expected a comma-separated subset of "
                       f"{','.join(CLUSTERERS)}, got {text!r}")
    return names


def _probe_files(args: argparse.Namespace) -> list[str]:
    """Every file ``probe`` may write in its folder (figures it ends up not drawing
    included), known before the work so that none is replaced unasked."""
    names = ["probe.json", "associativity.png"]
    for sfx in ("",) if args.no_init else ("", "_init"):
        names += [f"contingency_{c}{sfx}.png" for c in _clusterers(args.clusterers)]
        names += [] if args.no_umap else [f"umap{sfx}.png"]
    return names


def _figures(res: dict[str, Any], out: Path, umap: bool) -> list[str]:
    from monoidlab.viz import probing as pp

    written = []

    def save(fig: Figure, name: str) -> None:
        save_figure(fig, out / name, dpi=110, bbox_inches="tight")
        written.append(name)

    monoid = res["language"].monoid()
    for which in ("trained", "init"):
        r = res[which]
        if r is None:
            continue
        sfx = "" if which == "trained" else "_init"
        for name, est in r["agreement"].fitted.items():
            save(pp.contingency_heatmap(est, monoid, title=f"{which}: {name}"),
                 f"contingency_{name}{sfx}.png")
        if umap:
            save(pp.umap_figure(r["embeddings"], title=f"UMAP of node embeddings ({which})"),
                 f"umap{sfx}.png")
    if res["trained"]["associativity"] is not None:
        init = res["init"]["associativity"] if res["init"] else None
        save(pp.associativity_histograms(res["trained"]["associativity"], init),
             "associativity.png")
    return written


cmd_probe.configure = lambda p: (
    p.add_argument("checkpoint", help="checkpoint.pt or its run folder"),
    p.add_argument("--n-strings", type=int, default=200, help="held-out strings to embed"),
    p.add_argument("--lengths", default=None,
                   help="A:B (default: beyond the training lengths, max+1 .. 2·max)"),
    p.add_argument("--heldout", choices=("lengths", "disjoint"), default="lengths",
                   help="hold out by length (default) or by content (training strings "
                        "regenerated and excluded)"),
    p.add_argument("--n-triples", type=int, default=300, help="triples for associativity"),
    p.add_argument("--max-nodes", type=int, default=3000, help="nodes per clustering fit"),
    p.add_argument("--clusterers", default="kmeans,agglomerative,hdbscan",
                   help="comma-separated clustering methods"),
    p.add_argument("--seed", type=int, default=0),
    p.add_argument("--no-init", action="store_true", help="skip the model at initialisation"),
    p.add_argument("--no-umap", action="store_true", help="skip the UMAP figures (slow start)"),
    p.add_argument("--extract", default=None, metavar="automaton,monoid",
                   help="also extract the automaton (L*) and/or the operator's monoid and "
                        "compare them with the true ones"),
    p.add_argument("--max-states", type=int, default=64,
                   help="--extract automaton: stop past this many states"),
    p.add_argument("--max-queries", type=int, default=200_000,
                   help="--extract automaton: membership-query budget"),
    p.add_argument("--out", default=None, help="folder for probe.json and figures"),
    p.add_argument("--overwrite", action="store_true",
                   help="replace the files of an earlier probe in its folder"),
    p.add_argument("--json", action="store_true"))


@command("certify", "prove a finite model correct at every length, or give its shortest "
                    "counterexample")
def cmd_certify(args: argparse.Namespace) -> None:
    """``monoidlab certify RUN [--offsets] [--within W] [--json]``: the exact verdict over
    every length (docs/probing.md, "certificates"), on the run's own sub-language unless
    ``--within`` says otherwise; a continuous model's surrogate table is certified instead,
    and the output says so."""
    from monoidlab.probing.certify import certify

    c = certify(args.run, offsets=args.offsets, seed=args.seed, within=args.within)
    emit(args, c.to_dict(), c.text())


cmd_certify.configure = lambda p: (
    p.add_argument("run", help="a run folder (or checkpoint.pt)"),
    p.add_argument("--offsets", action="store_true",
                   help="also every left offset of every string (the tests use offset 0)"),
    p.add_argument("--within", default="run",
                   help="the strings to certify: 'run' (default: the run's own sub-language, "
                        "e.g. modular arithmetic's well-formed expressions; the verdict over "
                        "every string is shown beside it), 'none' (every string), or classes "
                        "as training's --within ('A,B', 'all-but:A')"),
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the test strings the table is compared with the model on"),
    p.add_argument("--json", action="store_true"))


COMMANDS = (cmd_probe, cmd_certify)
