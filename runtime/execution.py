"""What the reference executors share: the error they raise.

``runtime/aten_executor.py`` runs aten-level ops and hands every other op to
``runtime/loop_executor.py``; the loop executor runs an extern's region of aten
ops through the environment it is given (``env.execute_block``). Imports go
one way, aten_executor -> loop_executor -> this module."""


class ExecutionError(RuntimeError):
    """The module cannot run on these inputs (the message says which op or input)."""
