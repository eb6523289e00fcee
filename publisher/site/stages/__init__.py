"""The stages of a site build, in order (each one module, called by :mod:`..build`):

1. :mod:`.scan`: what each session file is now, reading only those that changed;
2. :mod:`.plan`: the archive's graph and which sessions to render;
3. :mod:`.render`: the planned sessions' pages, in a process pool;
4. :mod:`.write`: the theme's assets, and the removal of what is no longer published;
5. :mod:`.index`: ``index.html``;
6. :mod:`.search`: the search index, the bundles whose sessions changed;
7. :mod:`.state`: the manifest, for the next build.
"""
