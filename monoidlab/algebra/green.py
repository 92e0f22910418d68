"""Green's relations of a finite monoid from strongly connected components of its Cayley graphs.

x R y iff xM = yM iff x and y lie in one strongly connected component of the right Cayley graph;
L likewise on the left graph; H = R ∩ L; in a finite monoid J = D, the components of the graph
with both left and right edges. The components come from
``scipy.sparse.csgraph.connected_components`` (networkx gives the same partition, tested, but is
far slower past ~10^5 elements).

Example
-------
>>> import monoidlab as ml
>>> g = ml.load_language("tomita-5").monoid().green
>>> g.n_r, g.n_j, g.is_group
(1, 1, True)
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from monoidlab._checks import ReadOnlyError, is_int, read_only
from monoidlab.errors import InputError

if TYPE_CHECKING:
    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["GreenStructure", "EggBox", "scc_labels", "HTML_J_CLASSES"]


#: J-classes a notebook shows as egg-boxes (a large monoid has hundreds).
HTML_J_CLASSES = 12
HTML_CELL_ELEMENTS = 6  # words shown per H-class cell


def _egg_box_html(box: EggBox, labels: list[str] | None) -> str:
    """One egg-box as an HTML table: rows R-classes, columns L-classes, ``*`` idempotents."""
    def cell(members: list[int], idem: bool) -> str:
        words = [html.escape(labels[m] if labels is not None else str(m))
                 for m in members[:HTML_CELL_ELEMENTS]]
        extra = f", +{len(members) - HTML_CELL_ELEMENTS}" if len(members) > HTML_CELL_ELEMENTS else ""
        return f"<td>{'*' if idem else ''}{', '.join(words)}{extra}</td>"

    rows = "".join("<tr>" + "".join(cell(c, i) for c, i in zip(row, irow)) + "</tr>"
                   for row, irow in zip(box.cells, box.idempotent_cells))
    kind = "regular" if box.is_regular else "not regular"
    return (f"<table border='1' style='display:inline-table;margin:4px;border-collapse:collapse'><caption>J-class {box.j_class} "
            f"({kind})</caption>{rows}</table>")


def scc_labels(size: int, *tables: np.ndarray) -> np.ndarray:
    """Strongly connected component label of each node of the graph m -> table[m, a]."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    src = np.concatenate([np.repeat(np.arange(size), t.shape[1]) for t in tables])
    dst = np.concatenate([np.asarray(t).ravel() for t in tables])
    graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(size, size)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    # Renumber by first occurrence so that class 0 holds the identity (element 0).
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inv.ravel()]


@dataclass(frozen=True)
class EggBox:
    """One D-class drawn as an egg-box: rows are R-classes, columns L-classes, cells H-classes."""

    j_class: int
    r_classes: list[int]
    l_classes: list[int]
    cells: list[list[list[int]]]  # cells[row][col] = elements of that H-class
    idempotent_cells: list[list[bool]]
    is_regular: bool

    def _repr_html_(self) -> str:
        return _egg_box_html(self, None)  # element indices: the box does not hold its words


class GreenStructure:
    """R, L, H, J (= D) class labels per element and the derived algebraic properties.

    Cached on its monoid and shared: the label arrays ``r``, ``l``, ``h``, ``j`` are read-only
    and the attributes cannot be reassigned.

    >>> import monoidlab as ml
    >>> g = ml.load_language("parity").monoid().green
    >>> g.r.tolist(), g.r.flags.writeable
    ([0, 0], False)
    """

    def __init__(self, monoid: SyntacticMonoid) -> None:
        self.monoid = monoid
        n = monoid.size
        self.r: np.ndarray = read_only(scc_labels(n, monoid.right))
        self.l: np.ndarray = read_only(scc_labels(n, monoid.left))
        self.j: np.ndarray = read_only(scc_labels(n, monoid.right, monoid.left))
        _, first, h = np.unique(self.r * (self.l.max() + 1) + self.l, return_index=True,
                                return_inverse=True)
        rank = np.empty(len(first), np.int64)
        rank[np.argsort(first)] = np.arange(len(first))  # numbered by first element, like R/L/J
        self.h: np.ndarray = read_only(rank[h.ravel()])
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, key: str, value: object) -> None:
        if self.__dict__.get("_frozen"):
            raise ReadOnlyError(f"GreenStructure is immutable (it is cached on its monoid); "
                                f"cannot set {key!r}")
        object.__setattr__(self, key, value)

    def __delattr__(self, key: str) -> None:
        raise ReadOnlyError(f"GreenStructure is immutable; cannot delete {key!r}")

    def __call__(self) -> GreenStructure:
        """``monoid.green()`` is ``monoid.green``: the relations are a property (computed
        once), called like :meth:`Automaton.monoid <monoidlab.algebra.automaton.Automaton.monoid>`
        by habit, so the call answers with the same object."""
        return self

    def summary(self) -> dict[str, object]:
        """Class counts and properties as plain data.

        >>> import monoidlab as ml
        >>> ml.load_language("dyck-2").monoid().green.summary()["j_classes"]
        4
        """
        return {"size": self.monoid.size, "idempotents": int(len(self.monoid.idempotents)),
                "r_classes": self.n_r, "l_classes": self.n_l, "h_classes": self.n_h,
                "j_classes": self.n_j, "group": self.is_group, "aperiodic": self.is_aperiodic,
                "j_trivial": self.j_trivial, "r_trivial": self.r_trivial,
                "l_trivial": self.l_trivial}

    def __repr__(self) -> str:
        """One line: the class counts and the properties that hold.

        >>> import monoidlab as ml
        >>> ml.load_language("dyck-2").monoid().green
        GreenStructure(dyck-2: |M|=15, R=7, L=7, H=15, J=4, idempotents=7; aperiodic)
        """
        s = self.summary()
        props = [p.replace("_", "-") for p in ("group", "aperiodic", "j_trivial", "r_trivial",
                                               "l_trivial") if s[p]]
        name = getattr(self.monoid.automaton, "name", "?")
        return (f"GreenStructure({name}: |M|={s['size']}, R={s['r_classes']}, L={s['l_classes']}"
                f", H={s['h_classes']}, J={s['j_classes']}, idempotents={s['idempotents']}"
                + (f"; {', '.join(props)}" if props else "") + ")")

    def _repr_html_(self) -> str:
        """The summary and the egg-box of each J-class (the first :data:`HTML_J_CLASSES`),
        cells holding the elements' representative words, idempotent cells starred."""
        labels = self.monoid.labels()
        shown = min(self.n_j, HTML_J_CLASSES)
        boxes = "".join(_egg_box_html(self.egg_box(j), labels) for j in range(shown))
        more = (f"<p>... {self.n_j - shown} more J-classes (<code>egg_box(j)</code>)</p>"
                if self.n_j > shown else "")
        return f"<p>{html.escape(repr(self))}</p>{boxes}{more}"

    n_r = property(lambda self: int(self.r.max()) + 1)
    n_l = property(lambda self: int(self.l.max()) + 1)
    n_h = property(lambda self: int(self.h.max()) + 1)
    n_j = property(lambda self: int(self.j.max()) + 1)

    @property
    def is_group(self) -> bool:
        """A finite monoid is a group iff its only idempotent is the identity."""
        return len(self.monoid.idempotents) == 1

    @property
    def is_aperiodic(self) -> bool:
        """Aperiodic iff every H-class is a singleton (no non-trivial subgroup)."""
        return self.n_h == self.monoid.size

    j_trivial = property(lambda self: self.n_j == self.monoid.size)
    r_trivial = property(lambda self: self.n_r == self.monoid.size)
    l_trivial = property(lambda self: self.n_l == self.monoid.size)

    def egg_box(self, j_class: int) -> EggBox:
        """Egg-box data of one J-class ``0 .. n_j - 1`` (for the egg-box diagram of small
        monoids)."""
        if (isinstance(j_class, list | tuple | np.ndarray) and np.ndim(j_class) != 0) or (
                not is_int(j_class) or not 0 <= j_class < self.n_j):
            raise InputError(f"no J-class {j_class!r}"[:80] + f"; j_class: an integer in 0 .. "
                             f"{self.n_j - 1} (there are {self.n_j})")
        j_class = int(j_class)
        members = np.flatnonzero(self.j == j_class)
        rs = sorted(set(self.r[members].tolist()))
        ls = sorted(set(self.l[members].tolist()))
        idem = set(self.monoid.idempotents.tolist())
        cells = [[[int(m) for m in members if self.r[m] == r and self.l[m] == l_] for l_ in ls]
                 for r in rs]
        icells = [[any(m in idem for m in c) for c in row] for row in cells]
        return EggBox(j_class, rs, ls, cells, icells, any(any(row) for row in icells))

    def egg_boxes(self) -> list[EggBox]:
        return [self.egg_box(j) for j in range(self.n_j)]
