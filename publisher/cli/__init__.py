"""The ``polyglav`` command line: parse, call one function, map errors to exit codes.

- :mod:`.app`: the typer applications, the ``--debug`` state and the one error mapping
  (:mod:`publisher.errors`);
- :mod:`.options`: every option type, declared once;
- :mod:`.read` (``sessions``, ``sessions preview``, ``history``, ``print``),
  :mod:`.export`, :mod:`.importing` (``import``) and :mod:`.site` (``site build|watch|
  serve``): the commands.

Commands import their work inside the function, as mkdocs does, so ``--help`` and the
read commands start without loading the renderers or the site build.
"""

from __future__ import annotations

from . import export, importing, read, redaction, site  # noqa: F401  (each registers commands)
from .app import app, main

__all__ = ["app", "main"]
