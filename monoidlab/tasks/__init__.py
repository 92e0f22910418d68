"""Sequence tasks: the 15 Delétang et al. (2023) tasks and ListOps, as int-token batches.

Examples:
    >>> import numpy as np
    >>> from monoidlab.tasks import get_task, TASKS
    >>> len(TASKS)
    16
    >>> get_task("odds_first").label(np.array([0, 1, 0, 1, 1]))[0].tolist()
    [[0, 0, 1, 1, 1]]
"""

from .base import TASKS, RandomStream, Task, TaskBatch, as_generator, get_task, register_task
from .deletang import (
    DELETANG_TASKS,
    BinaryAddition,
    BinaryMultiplication,
    BucketSort,
    ComputeSqrt,
    CycleNavigation,
    DuplicateString,
    EvenPairs,
    MissingDuplicateString,
    ModularArithmetic,
    ModularArithmeticBrackets,
    OddsFirst,
    ParityCheck,
    ReverseString,
    SolveEquation,
    StackManipulation,
)
from .deletang_dcf import evaluate_brackets, generate_bracket_expression
from .listops import (
    LISTOPS_VOCAB,
    ListOps,
    ListOpsSplit,
    evaluate_listops,
    listops_depth,
    listops_splits,
)

__all__ = [
    "DELETANG_TASKS",
    "LISTOPS_VOCAB",
    "TASKS",
    "BinaryAddition",
    "BinaryMultiplication",
    "BucketSort",
    "ComputeSqrt",
    "CycleNavigation",
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
    "ReverseString",
    "SolveEquation",
    "StackManipulation",
    "Task",
    "TaskBatch",
    "as_generator",
    "evaluate_brackets",
    "evaluate_listops",
    "generate_bracket_expression",
    "get_task",
    "listops_depth",
    "listops_splits",
    "register_task",
]
