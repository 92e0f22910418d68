"""The algebra: automata, their syntactic monoids and the language files.

* :mod:`~monoidlab.algebra.automaton`: :class:`Automaton` (a complete DFA with classes),
  minimisation, running strings;
* :mod:`~monoidlab.algebra.monoid` (+ ``_enumerate``): the syntactic monoid, enumerated as
  the transition monoid of the minimal machine; :mod:`~monoidlab.algebra.green`: Green's
  relations;
* :mod:`~monoidlab.algebra.families`, :mod:`~monoidlab.algebra.spec`,
  :mod:`~monoidlab.algebra.languages`: the suite's language families, TOML specs and names;
  :mod:`~monoidlab.algebra.random_languages`: the random-language generators.

>>> from monoidlab.algebra.languages import load_language
>>> load_language("parity").monoid().size
2
"""
