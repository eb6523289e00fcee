"""The site's full-text search: an index the build writes as static script files, searched
by the client in ``themes/default/assets/search.js`` (from ``file://``, any static host
and ``site serve`` alike: script tags, no fetch, no WebAssembly).

- :mod:`.terms`: what a term is (words, folding, CJK bigrams, Snowball stemming), the rule
  the client repeats;
- :mod:`.extract`: what of a session is indexed, and the session's record (its turns'
  texts and each term's weighted count in each turn), made by the render beside its pages;
- :mod:`.bundle`: the files of one bundle of sessions (document chunks, facets, a meta
  file) and its term entries, a pure function of its sessions' records;
- :mod:`.shared`: the term chunks every bundle shares (a term's entries of every bundle in
  one), made again where terms changed;
- :mod:`.store`: what the search keeps in the build's cache folder (the records, the
  state of the bundles, every bundle's term entries), behind one small interface;
- :mod:`..stages.search`: which bundles a build writes again.

See docs/search.md for what is indexed, the query syntax and the limits.
"""
