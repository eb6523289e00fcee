"""A rich progress bar for long builds, silent when not on a terminal."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .context import ProgressHook


@contextlib.contextmanager
def progress_hook(enabled: bool) -> Iterator[ProgressHook | None]:
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as progress:
        tasks: dict[str, TaskID] = {}

        def hook(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = progress.add_task(stage, total=total)
            progress.update(tasks[stage], completed=done)

        yield hook
