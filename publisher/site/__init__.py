"""The static site: gather (summaries and links), render pages, write, incremental build."""
