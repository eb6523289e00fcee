"""Polyglav transcript publisher: session logs to a lossless Markdown export and a static site."""

__version__ = "0.1.0"
