"""The label families, each declared once in its own package (`annotation/<family>/family.py`).

Agreement, hybrid estimates, judge menus and the console's uploads and downloads read the families here;
a new family adds its package, its import here and its place in `FAMILIES`.
"""

from annotation.labels.family import FileKind, LabelFamily, LabelTask
from annotation.nuggets.family import FAMILY as NUGGETS
from annotation.ptkb.family import FAMILY as PTKB
from annotation.rag_nuggets.family import FAMILY as RAG_NUGGETS
from annotation.relevance.family import FAMILY as RELEVANCE
from annotation.support.family import FAMILY as SUPPORT

FAMILIES: tuple[LabelFamily, ...] = (RELEVANCE, PTKB, NUGGETS, SUPPORT, RAG_NUGGETS)

# Every task of every family by name, in the families' order.
LABEL_TASKS: dict[str, LabelTask] = {task.name: task for family in FAMILIES for task in family.tasks}

# Every file a family takes in or gives out, by kind.
FILE_KINDS: dict[str, FileKind] = {file.kind: file for family in FAMILIES for file in family.files}


def label_task(name: str) -> LabelTask:
    """The task named `name`; a ValueError naming the tasks there are otherwise."""
    try:
        return LABEL_TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(LABEL_TASKS)}") from None
