"""Sequence tasks: the 15 Delétang et al. (2023) tasks, ListOps, decimal addition and text
classification on local files.

Modules by level: :mod:`~monoidlab.tasks.regular` (R), :mod:`~monoidlab.tasks.dcf`,
:mod:`~monoidlab.tasks.cs`, :mod:`~monoidlab.tasks.listops`, :mod:`~monoidlab.tasks.addition`
(next-token prediction), :mod:`~monoidlab.tasks.text` (AG's News, DBPedia, SST-2). Every task
is a :class:`Task` registered in ``TASKS``.

Examples:
    >>> import numpy as np
    >>> from monoidlab.tasks import get_task, TASKS
    >>> len(TASKS), get_task("addition").readout
    (20, 'next_token')
    >>> get_task("odds_first").label(np.array([0, 1, 0, 1, 1]))[0].tolist()
    [[0, 0, 1, 1, 1]]
"""

from .addition import AdditionTask
from .base import TASKS, RandomStream, Task, TaskBatch, as_generator, get_task, register_task
from .cs import (
    BinaryAddition,
    BinaryMultiplication,
    BucketSort,
    ComputeSqrt,
    DuplicateString,
    MissingDuplicateString,
    OddsFirst,
)
from .dcf import (
    ModularArithmeticBrackets,
    ReverseString,
    SolveEquation,
    StackManipulation,
    evaluate_brackets,
    generate_bracket_expression,
)
from .listops import (
    LISTOPS_VOCAB,
    ListOps,
    ListOpsSplit,
    evaluate_listops,
    listops_depth,
    listops_splits,
)
from .regular import CycleNavigation, EvenPairs, ModularArithmetic, ParityCheck
from .text import SST2, AGNews, DBPedia, TextTask

#: The 15 task names in the order of the paper's table (R, DCF, CS).
DELETANG_TASKS = (
    "even_pairs",
    "modular_arithmetic",
    "parity_check",
    "cycle_navigation",
    "stack_manipulation",
    "reverse_string",
    "modular_arithmetic_brackets",
    "solve_equation",
    "duplicate_string",
    "missing_duplicate_string",
    "odds_first",
    "binary_addition",
    "binary_multiplication",
    "compute_sqrt",
    "bucket_sort",
)

__all__ = [
    "DELETANG_TASKS",
    "LISTOPS_VOCAB",
    "TASKS",
    "AGNews",
    "AdditionTask",
    "BinaryAddition",
    "BinaryMultiplication",
    "BucketSort",
    "ComputeSqrt",
    "CycleNavigation",
    "DBPedia",
    "DuplicateString",
    "EvenPairs",
    "ListOps",
    "ListOpsSplit",
    "MissingDuplicateString",
    "ModularArithmetic",
    "ModularArithmeticBrackets",
    "OddsFirst",
    "ParityCheck",
    "RandomStream",
    "SST2",
    "ReverseString",
    "SolveEquation",
    "StackManipulation",
    "Task",
    "TaskBatch",
    "TextTask",
    "as_generator",
    "evaluate_brackets",
    "evaluate_listops",
    "generate_bracket_expression",
    "get_task",
    "listops_depth",
    "listops_splits",
    "register_task",
]
