"""CLI commands on the algebra: ``monoidlab languages`` and ``monoidlab monoid``."""

from __future__ import annotations

import argparse

from monoidlab.cli._common import command, emit, format_table

__all__ = ["COMMANDS"]


@command("languages", "summary table of the language suite (states, |M|, idempotents, the "
                      "numbers R, L, H, J of Green's classes, properties)")
def cmd_languages(args: argparse.Namespace) -> None:
    """One row per language: states, alphabet and class counts, the monoid's size and
    idempotents, its numbers of R-, L-, H- and J-classes (columns R, L, H, J; J = D in a finite
    monoid), and whether it is a group, aperiodic, commutative."""
    import monoidlab as ml

    names = ml.suite(args.suite)
    rows = []
    for name in names:
        a = ml.load_language(name)
        s = a.monoid(max_elements=args.max_elements).summary()
        rows.append({"name": name, "states": s["states"], "alphabet": len(a.alphabet),
                     "classes": a.n_classes, "size": s["size"], "idempotents": s["idempotents"],
                     "r_classes": s["r_classes"], "l_classes": s["l_classes"],
                     "h_classes": s["h_classes"], "j_classes": s["j_classes"],
                     "group": s["group"], "aperiodic": s["aperiodic"],
                     "commutative": s["commutative"]})
    short = {"r_classes": "R", "l_classes": "L", "h_classes": "H", "j_classes": "J",
             "idempotents": "idemp."}
    cols = ["name", "states", "alphabet", "classes", "size", "idempotents", "r_classes",
            "l_classes", "h_classes", "j_classes", "group", "aperiodic", "commutative"]
    table = format_table([{short.get(k, k): v for k, v in r.items()} for r in rows],
                         [short.get(c, c) for c in cols])
    emit(args, rows, table)


cmd_languages.configure = lambda p: (
    p.add_argument("--suite", default="all", help="ldru21, tomita, deletang-regular or all"),
    p.add_argument("--max-elements", type=int, default=1_000_000),
    p.add_argument("--json", action="store_true"))


@command("monoid", "the syntactic monoid of one language (size, Green's classes, properties)")
def cmd_monoid(args: argparse.Namespace) -> None:
    import monoidlab as ml

    a = ml.load_language(args.language)
    m = a.monoid(max_elements=args.max_elements)
    s = m.summary()
    if args.elements:
        s["elements"] = [{"index": i, "word": w, "class": a.classes[m.outputs[i]]}
                         for i, w in enumerate(m.words)]
    lines = [f"{k:>14}: {v}" for k, v in s.items() if k != "elements"]
    if args.elements:
        lines += ["", format_table(s["elements"], ["index", "word", "class"])]
    emit(args, s, "\n".join(lines))


cmd_monoid.configure = lambda p: (
    p.add_argument("language", help="suite name (e.g. dyck-6) or path to a TOML spec"),
    p.add_argument("--max-elements", type=int, default=1_000_000),
    p.add_argument("--elements", action="store_true", help="also list every element's word"),
    p.add_argument("--json", action="store_true"))


COMMANDS = (cmd_languages, cmd_monoid)
