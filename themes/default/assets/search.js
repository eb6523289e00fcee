/* Polyglav publisher: search, on the index page (index written by the build in search/,
 * see publisher/site/search/ and docs/search.md).
 *
 * The index is script files that hand their data to window.__polyglavSearch.add(bundle,
 * kind, name, data): loaded by script tags, they work from file:// as over HTTP, with no
 * fetch and no WebAssembly. search/index.js lists the bundles and their meta files and
 * where each term chunk starts; the term chunks are shared by every bundle (a term's
 * entry holds its postings in each bundle); a bundle's meta file says which document chunk
 * holds which turns. A query loads only the term chunks of its words, then the meta files
 * of the bundles of the results it shows and those results' document chunks.
 *
 * Text from the index is only ever inserted as text (text nodes and <mark> elements built
 * here), never as HTML. */
(function () {
  "use strict";

  /* ---- terms: the rules of publisher/site/search/terms.py, with the same tables ---- */
  var WORD_RANGES =
    "30.9 8.19 7.19 30 8.1 2 4.1 2.2 2.16 2.1e 2.1c9 5.b f.4 8 2 12.74 2.1 3.3 2 7 2.2 2 2.13 2.52 " +
    "2.8a 2.ac 2.25 3 7.28 9.2c 2 2.1 2.1 2 9.1a 5.3 1e.a 6.49 5.65 2.7 3.9 2.12 3 11.3a 3.64 f.35 5 " +
    "3 3.2d 13.1b 5.a 6.17 2.5 a.49 2.80 3.9 2.12 2.7 3.1 3.15 2.6 2 4.3 3.8 3.1 3.3 9 5.1 2.4 3.b " +
    "3.5 3 2 3.2 2.5 5.1 3.15 2.6 2.1 2.1 2.1 3 2.4 5.1 3.2 4 8.3 2 8.f c.2 2.8 2.2 2.15 2.6 2.1 2.4 " +
    "3.9 2.2 2.2 3 10.3 3.9 a.6 2.2 2.7 3.1 3.15 2.6 2.1 2.4 3.8 3.1 3.2 8.2 5.1 2.4 3.9 2.6 b.1 2.5 " +
    "4.2 2.3 4.1 2 2.1 4.1 4.2 4.b 5.4 4.2 2.3 3 7 f.c e.c 2.2 2.16 2.f 3.8 2.2 2.3 8.1 2.2 3 3.3 3.9 " +
    "9.6 2.3 2.7 2.2 2.16 2.9 2.4 3.8 2.2 2.3 8.1 7.1 2.3 3.9 2.1 e.c 2.2 2.32 2.2 2.4 6.f 3.12 2.5 " +
    "2.2 2.11 4.17 2.8 2 3.6 4 5.5 2 2.7 7.9 3.1 e.39 6.e 2.9 28.1 2 2.4 2.17 2 2.16 3.4 2 2.5 3.9 " +
    "3.3 21 18.1 7.13 2 2 2 5.9 2.23 5.13 2.11 2.23 a 3a.49 7.4d 3.25 2 6 3.2a 2.14c 2.3 3.6 2 2.3 " +
    "3.28 2.3 3.20 2.3 3.6 2 2.3 3.e 2.38 2.3 3.42 3.2 a.13 4.f 11.55 3.5 4.26b 3.10 2.19 6.4a 4.a " +
    "8.15 a.15 c.13 d.c 2.2 2.1 d.53 4 5.1 3.9 7.9 12.2 2.a 7.58 8.2a 6.45 b.1e 2.b 5.b b.27 3.4 c.2b " +
    "5.19 7.a 26.1b 5.3e 2.1c 3.a 7.9 e 9.1e 32.4c 4.9 12.8 d.73 d.37 9.9 4.30 3.8 8.2a 3.2 11.2 2.26 " +
    "6.215 3.5 3.25 3.5 3.7 2 2 2 2.1e 3.34 2.6 2 4.2 2.6 4.3 3.5 5.c 6.2 2.6 74.1 3.5 6.a 7.c 34.20 " +
    "12 5 3.9 2 4.4 7 2 2 2.3 2.a 3.3 6.4 5 2.39 2d7.3b 4f.15 277.1d 46d.e4 7.8 a 3.25 2 6 3.37 8 " +
    "10.17 a.6 2.6 2.6 2.6 2.6 2.6 2.6 2.6 2.1f 30 1d6.2 1a.e 2.4 3.4 5.55 3.1 3.2 2.59 2.3 6.2a 2.5d " +
    "4.3 b.1f 31.f 21.9 1f.7 2.e 21.9 28.e 141.19bf 41.568c 44.2d 3.10c 4.1b 15.32 2.9 2.72 26.8 3.66 " +
    "3.3f 6.1 2 2.4 19.35 5 4.5 b.33 d.45 b.9 7.17 4 2.30 3.23 d.1c 4.40 f.a 7.1e 2.36 a.d 3.9 7.16 " +
    "4.48 19.2 3.f 3.4 b.5 3.5 3.5 a.6 2.6 2.2a 2.d 7.7a 2.1 3.9 7.2ba3 d.16 5.30 2105.16d 3.69 27.6 " +
    "d.4 6.b 2.c 2.4 2 2.1 2.1 2.6b 22.16a 13.3f 3.35 29.b 5.f 11.f 41.4 2.86 14.9 8.19 7.19 c.58 4.5 " +
    "3.5 3.5 3.2 24.b 2.19 2.12 2.1 2.e 3.d 23.7a d.2c d.38 12.1 72 83.1c 4.30 10.1b 5.23 a.1d 6.2a " +
    "6.1d 3.23 5.7 2.4 2b.9d 3.9 7.23 5.23 5.27 9.33 d.a 2.e 2.6 2.1 2.a 2.e 2.6 2.1 44.136 a.15 b.7 " +
    "19.5 2.29 2.8 46.5 3 2.2b 2.1 4 3.16 3.1e 3.25 9.8 31.12 2.1 6.20 5.19 47.37 5.13 3.31 2.1 6.7 " +
    "2.2 2.1c 3.2 5.9 18.1e 2.1f 21.7 2.1d 5.4 11.35 b.15 3.1a 6.19 18.6 51.48 38.32 e.32 8.2d 9.9 " +
    "127.1e 2.29 2.1 4.1 4f.27 9.24 1c.15 2b.1b 15.16 a.46 c.23 a.3b 8 e.18 8.9 7.34 2.9 5.3 9.23 3 " +
    "a.44 5.3 2.c 2 5.13 c.11 2.24 7 42.6 2 2.3 2.e 2.9 8.3a 6.9 7.3 2.7 3.1 3.15 2.6 2.1 2.4 2.9 3.1 " +
    "3.2 3 7 6.6 3.6 4.4 8c.4a 6.9 5.3 1f.45 2 9.9 a7.35 3.8 18.5 23.40 4 c.9 27.38 8.9 37.1a 3.e 5.b " +
    "5.6 ba.3a 66.52 d.7 3 3.7 2.1 2.1d 2.1 3.8 d.9 47.7 3.2d 3.7 2.1 1c.3e 9 9.49 4 13.48 108.8 2.2c " +
    "2.8 10.1c 6.1d 3.15 2.d 4a.6 2.1 2.2b 4 2.1 2.8 9.9 7.5 2.1 2.24 2.1 2.5 8.9 137.16 ba 10.14 " +
    "2c.399 67.6e 12.c3 a4d.60 10.42e fd2.246 21ba.238 8.1e 2.9 7.4e 2.9 7.1d 3.4 c.36 a.3 d.9 2.6 " +
    "2.14 6.12 2b1.56 6a.4a 5.38 8.10 41.1 2.1 c.1 f.17f7 9.4d5 2b.8 22e8.3 2.6 2.1 2.122 2e.2 12.3 " +
    "9.18b 905.6a 6.c 4.8 8.9 4.1 1262.2d 3.16 21f.4 4.5 9.7 3.6 1f.3 95.2 9c.13 6d.18 88.54 2.46 2.1 " +
    "3 3.1 3.3 2.b 2 2.6 2.40 2.3 3.7 2.6 2.1b 2.3 2.4 2 4.6 2.153 3.18 2.18 2.1e 2.18 2.1e 2.18 2.1e " +
    "2.18 2.1e 2.18 2.7 3.31 201.36 5.31 9 f 17.4 2.e 451.1e e2.6 2.10 3.6 2.1 2.4 d6.2c 4.d 3.9 5 " +
    "142.1e 12.39 4e7.6 2.3 2.1 2.e 2.c4 3.f 2a.4b 5.9 318.3a 2.2 2.3 4d.2c 2.e c3.3 2.1a 2.1 2 3 2.9 " +
    "2.3 2 2 7 5 2 2 2.2 2.1 2 3 2 2 2 2 2.1 2 3.3 2.6 2.3 2.3 2 2.9 2.10 6.2 2.4 2.10 245.c ae4.9 " +
    "407.a6df 21.1038 8.dd 3.1681 f.1d30 c20.21d 5e3.134a aedb6.ef";
  var CJK_RANGES = "3005-3007 3021-3029 3031-3035 3038-303c 3041-30ff 31f0-31ff 3400-4dbf 4e00-9fff f900-faff ff66-ff9f 20000-3134f";
  var MAX_WORD = 64;

  function hex(n) { return "\\u{" + n.toString(16) + "}"; }
  function charClass(ranges) {
    return ranges.map(function (r) { return hex(r[0]) + (r[1] > r[0] ? "-" + hex(r[1]) : ""); }).join("");
  }
  function wordRanges() {
    var out = [], position = 0;
    WORD_RANGES.split(" ").forEach(function (item) {
      var parts = item.split("."), first = position + parseInt(parts[0], 16);
      position = first + parseInt(parts[1] || "0", 16);
      out.push([first, position]);
    });
    return out;
  }
  function cjkRanges() {
    return CJK_RANGES.split(" ").map(function (item) {
      var p = item.split("-");
      return [parseInt(p[0], 16), parseInt(p[1], 16)];
    });
  }
  var WORD_CLASS = charClass(wordRanges());
  var WORD = new RegExp("[" + WORD_CLASS + "]+", "gu");
  var CJK_SPLIT = new RegExp("([" + charClass(cjkRanges()) + "]+)", "u");
  var ASCII = /^[\x00-\x7f]*$/;
  var stemmer = typeof globalThis.PolyglavEnglishStemmer === "function" ? new globalThis.PolyglavEnglishStemmer() : null;
  var stems = Object.create(null);

  function fold(word) {
    if (ASCII.test(word)) { return word.toLowerCase(); }
    return word.normalize("NFKC").toLowerCase().replace(/\u03c2/g, "\u03c3");
  }
  function stem(word) {
    if (!/^[a-z]+$/.test(word) || !stemmer) { return word; }
    var s = stems[word];
    if (s === undefined) { s = stems[word] = stemmer.stemWord(word); }
    return s;
  }
  function codePoints(text) { return Array.from(text); }
  /* The terms of one word (steps 2-4); with raw: the folded words before stemming, in
   * step with the terms (for prefix search). */
  function wordTerms(word, raw) {
    var folded = fold(word), pieces, out = [];
    if (ASCII.test(folded)) {
      pieces = /^[a-z0-9]+$/.test(folded) ? [folded] : (folded.match(/[a-z0-9]+/g) || []);
    } else {
      pieces = folded.match(WORD) || [];
    }
    pieces.forEach(function (piece) {
      if (ASCII.test(piece)) {
        if (piece.length <= MAX_WORD) { out.push(stem(piece)); if (raw) { raw.push(piece); } }
        return;
      }
      piece.split(CJK_SPLIT).forEach(function (run, i) {
        if (!run) { return; }
        if (i % 2) {
          var cps = codePoints(run);
          for (var j = 0; j + 1 < cps.length; j++) { out.push(cps[j] + cps[j + 1]); if (raw) { raw.push(""); } }
          /* The run's last character alone: in a query only when it is the whole run
           * (then as a prefix: every character starts a term); else its bigrams hold it. */
          if (!raw || cps.length === 1) {
            out.push(cps[cps.length - 1]);
            if (raw) { raw.push(cps[0]); }
          }
        } else if (codePoints(run).length <= MAX_WORD) {
          out.push(stem(run));
          if (raw) { raw.push(run); }
        }
      });
    });
    return out;
  }
  /* Every term of a text, in order (the reference the build's terms are tested against). */
  function textTerms(text) {
    var out = [];
    (String(text).match(WORD) || []).forEach(function (w) { Array.prototype.push.apply(out, wordTerms(w)); });
    return out;
  }
  /* The words of a text with where each is and its terms (for excerpts and phrases). */
  function spans(text) {
    var out = [], m, words = new RegExp(WORD.source, "gu");  /* its own lastIndex: wordTerms uses WORD */
    while ((m = words.exec(text)) !== null) {
      out.push({ start: m.index, end: m.index + m[0].length, terms: wordTerms(m[0]) });
    }
    return out;
  }

  /* ---- loading the index: one script tag a file ---- */
  var files = Object.create(null), waiting = Object.create(null);
  var root = "";
  window.__polyglavSearch = {
    add: function (bundle, kind, name, data) {
      var key = String(bundle) + "/" + String(name);
      files[key] = data;
    },
    terms: textTerms,
    stem: stem
  };
  function load(bundle, name) {
    var key = bundle + "/" + name;
    if (!/^[a-z0-9-]*\/[a-z0-9-]+$/.test(key)) { return Promise.reject(new Error("bad index file name")); }
    if (waiting[key]) { return waiting[key]; }
    waiting[key] = new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = root + "search/" + (bundle ? bundle + "/" : "") + name + ".js";
      tag.onload = function () {
        if (key in files) { resolve(files[key]); } else { reject(new Error("index file " + key + " is not the expected one")); }
      };
      tag.onerror = function () { delete waiting[key]; reject(new Error("index file " + key + " did not load")); };
      document.head.appendChild(tag);
    });
    return waiting[key];
  }

  var index = null;
  /* Up to this many bundles (an archive of up to about 20,000 sessions), their meta files
   * load with the index, as the search box gets the focus (61 KB at 20,000 sessions): a
   * query then loads its results' document chunks in the round after its term chunks. */
  var EAGER_METAS = 32;
  /* The index: its bundles, where each term chunk starts and the chunks' names. Past
   * EAGER_METAS bundles, a bundle's meta file is loaded when a result of it is shown or a
   * filter is set (metaOf), not here: at 100,000 sessions the 128 bundles' metas are 282 KB,
   * of which a query needs the few of the bundles its shown results are in. */
  function open() {
    if (!index) {
      index = load("", "index").then(function (data) {
        if (!data || data.format !== 4 || !Array.isArray(data.bundles)) { throw new Error("unknown index format"); }
        var firsts = [""].concat(data.terms ? String(data.terms).split(" ") : []);
        var chunkNames = data.chunks ? String(data.chunks).split(" ") : [];
        var bundles = data.bundles.map(function (b) {
          return { id: String(b[0]), metaName: String(b[1]), number: Number(b[2]), meta: null };
        });
        var byNumber = Object.create(null);
        bundles.forEach(function (b, i) { byNumber[b.number] = i; });
        if (bundles.length <= EAGER_METAS) { bundles.forEach(metaOf); }
        return { data: data, bundles: bundles, byNumber: byNumber, firsts: firsts, chunkNames: chunkNames };
      });
      index.catch(function () { index = null; });
    }
    return index;
  }

  /* A bundle's meta file, loaded once: where each of its document chunks starts (docStarts,
   * decoded), their names (docNames) and its facets' file (facets). */
  function metaOf(bundle) {
    if (!bundle.meta) {
      bundle.meta = load(bundle.id, bundle.metaName).then(function (meta) {
        var starts = meta && Array.isArray(meta.starts) ? meta.starts : ["", ""];
        return { docStarts: numbers(String(starts[0])), docNames: String(starts[1]).split(" "), facets: String(meta && meta.facets) };
      });
      bundle.meta.catch(function () { bundle.meta = null; });
    }
    return bundle.meta;
  }

  /* ---- postings ---- */
  var DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  var DIGIT = new Int8Array(128).fill(-1);
  for (var d = 0; d < DIGITS.length; d++) { DIGIT[DIGITS.charCodeAt(d)] = d; }
  function numbers(text) {
    var out = [], value = 0, shift = 0;
    for (var i = 0; i < text.length; i++) {
      var digit = DIGIT[text.charCodeAt(i)];
      value += (digit & 31) * Math.pow(2, shift);
      if (digit >= 32) { shift += 5; } else { out.push(value); value = 0; shift = 0; }
    }
    return out;
  }
  /* Calls fn(session, position, impact) for each turn of a term's postings: for each
   * session, its number after the previous one's, doubled, plus one when several of its
   * turns hold the term (then how many, less two); then each turn's position in the
   * session times 32 plus its impact (publisher/site/search/bundle.py). */
  function eachPosting(text, fn) {
    var n = numbers(text), i = 0, session = 0;
    while (i < n.length) {
      var head = n[i++];
      session += Math.floor(head / 2);
      var count = head % 2 ? n[i++] + 2 : 1;
      for (var k = 0; k < count; k++) { var w = n[i++]; fn(session, Math.floor(w / 32), w % 32); }
    }
  }
  /* The index of the chunk holding key: the last whose first term is <= key. */
  function chunkOf(firsts, key) {
    var lo = 0, hi = firsts.length - 1, found = 0;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      if (firsts[mid] <= key) { found = mid; lo = mid + 1; } else { hi = mid - 1; }
    }
    return found;
  }

  /* ---- queries ---- */
  /* A query: its clauses (each a term, or a prefix being typed, all required) and its
   * quoted phrases (each the sequence of its terms). */
  function parse(query) {
    var clauses = [], phrases = [], m, re = /"([^"]*)("?)|([^\s"]+)/g;
    var open = !/[\s"]$/.test(query);
    var lastClause = null;
    while ((m = re.exec(query)) !== null) {
      var quoted = m[1] !== undefined, text = quoted ? m[1] : m[3];
      var raw = [], terms = [];
      (text.match(WORD) || []).forEach(function (w) { Array.prototype.push.apply(terms, wordTerms(w, raw)); });
      if (!terms.length) { continue; }
      if (quoted && terms.length > 1) { phrases.push(terms); }
      terms.forEach(function (t, i) {
        var clause = { term: t, prefix: null, quoted: quoted };
        clauses.push(clause);
        lastClause = quoted ? null : clause;
        if (!quoted && i === terms.length - 1) { lastClause.raw = raw[i]; }
      });
      if (quoted) { lastClause = null; }
      if (quoted && m[2] === "") { open = false; }
    }
    /* The word being typed: a prefix from two characters (one of Chinese or Japanese); one
     * other character is a word of its own. Either of one or two characters (but Chinese
     * or Japanese) is "short" (see LETTER_MS). */
    var short = false;
    if (open && lastClause && lastClause.raw) {
      var cps = codePoints(lastClause.raw).length, cjk = CJK_SPLIT.test(lastClause.raw);
      if (cps >= 2 || (cps === 1 && cjk)) { lastClause.prefix = lastClause.raw; }
      if (cps <= 2 && !cjk) { short = true; }
    }
    /* The same term twice is one clause. */
    var seen = Object.create(null), unique = [];
    clauses.forEach(function (c) {
      var k = c.term + "\u0000" + (c.prefix || "");
      if (!seen[k]) { seen[k] = true; unique.push(c); }
    });
    return { clauses: unique, phrases: phrases, short: short };
  }

  var MAX_EXPANSION = 40;
  /* A prefix reads at most this many term chunks (the words of the first ones); one of two
   * characters or fewer reads one, the chunk where its words begin: its words fill many
   * chunks, of which one or two are as partial a slice, and it is mostly a word being typed
   * (about 90 KB at 100,000 sessions for a chunk shown for the time of one keystroke). */
  var MAX_PREFIX_CHUNKS = 2;
  /* The entries of each clause: loads the term chunks needed (two rounds: a prefix may find
   * an alias whose stem is in another chunk). An entry is [term, stem, bundle, turns,
   * postings, bundle, turns, postings, ...]; each clause's are the most frequent first. */
  function clauseEntries(idx, clauses) {
    var firsts = idx.firsts;
    function chunksFor(c) {
      var from = chunkOf(firsts, c.prefix !== null && c.prefix < c.term ? c.prefix : c.term);
      var to = chunkOf(firsts, c.term);
      if (c.prefix !== null) { to = Math.max(to, chunkOf(firsts, c.prefix + "\uffff")); }
      var out = [];
      var most = c.prefix !== null && codePoints(c.prefix).length <= 2 ? 1 : MAX_PREFIX_CHUNKS;
      for (var i = from; i <= to && out.length < most; i++) { out.push(i); }
      if (out.indexOf(chunkOf(firsts, c.term)) < 0) { out.push(chunkOf(firsts, c.term)); }
      return out;
    }
    function loadChunks(list) {
      /* An index of no words names no chunk: nothing to load. */
      return Promise.all(list.map(function (i) { return i < idx.chunkNames.length ? load("terms", "t-" + idx.chunkNames[i]) : Promise.resolve([]); }));
    }
    function postings(e) { return e.length > 2; }
    function frequency(e) { var f = 0; for (var i = 3; i < e.length; i += 3) { f += e[i]; } return f; }
    var wanted = [];
    clauses.forEach(function (c) { chunksFor(c).forEach(function (i) { if (wanted.indexOf(i) < 0) { wanted.push(i); } }); });
    return loadChunks(wanted).then(function (chunks) {
      var entries = Object.create(null);
      chunks.forEach(function (chunk) { chunk.forEach(function (e) { entries[e[0]] = e; }); });
      var perClause = clauses.map(function (c) {
        var found = Object.create(null), stemsWanted = [];
        if (entries[c.term] && postings(entries[c.term])) { found[c.term] = entries[c.term]; }
        if (c.prefix !== null) {
          Object.keys(entries).forEach(function (k) {
            if (k.lastIndexOf(c.prefix, 0) !== 0) { return; }
            var e = entries[k];
            if (postings(e)) { found[k] = e; }
            if (e[1] && stemsWanted.indexOf(e[1]) < 0) { stemsWanted.push(e[1]); }
          });
        }
        return { found: found, stems: stemsWanted };
      });
      var more = [];
      perClause.forEach(function (pc) {
        pc.stems.forEach(function (s) { var i = chunkOf(firsts, s); if (wanted.indexOf(i) < 0 && more.indexOf(i) < 0) { more.push(i); } });
      });
      return loadChunks(more).then(function (extra) {
        extra.forEach(function (chunk) { chunk.forEach(function (e) { entries[e[0]] = e; }); });
        return perClause.map(function (pc) {
          pc.stems.forEach(function (s) { if (entries[s] && postings(entries[s])) { pc.found[s] = entries[s]; } });
          var list = Object.keys(pc.found).map(function (k) { var e = pc.found[k]; return { e: e, f: frequency(e) }; });
          list.sort(function (a, b) { return b.f - a.f || (a.e[0] < b.e[0] ? -1 : 1); });
          return list.slice(0, MAX_EXPANSION).map(function (x) { return x.e; });
        });
      });
    });
  }

  /* Each bundle's share of the clauses' entries: for bundle i, for each clause, a list of
   * [term, turns, postings]. */
  function byBundle(idx, perClause) {
    var out = idx.bundles.map(function () { return perClause.map(function () { return []; }); });
    perClause.forEach(function (list, ci) {
      list.forEach(function (e) {
        for (var i = 2; i + 2 < e.length; i += 3) {
          var at = idx.byNumber[e[i]];
          if (at !== undefined) { out[at][ci].push([e[0], e[i + 1], e[i + 2]]); }
        }
      });
    });
    return out;
  }

  /* Runs a query over every bundle: the ranked results (turns holding every clause
   * first, then sessions holding them in separate turns), without their texts. */
  function run(query, filters) {
    var parsed = parse(query);
    if (!parsed.clauses.length) { return Promise.resolve({ parsed: parsed, results: [], sessions: 0 }); }
    return open().then(function (idx) {
      return Promise.all([clauseEntries(idx, parsed.clauses), Promise.all(idx.bundles.map(function (b) {
        return filters.active ? metaOf(b).then(function (meta) { return load(b.id, meta.facets); }) : null;
      }))]).then(function (both) {
        var shares = byBundle(idx, both[0]);
        var loaded = idx.bundles.map(function (b, i) { return [shares[i], both[1][i]]; });
        var total = idx.data.documents || 1, df = Object.create(null);
        loaded.forEach(function (l) { l[0].forEach(function (list) { list.forEach(function (e) { df[e[0]] = (df[e[0]] || 0) + e[1]; }); }); });
        function idf(term) { var f = df[term] || 0; return Math.log(1 + (total - f + 0.5) / (f + 0.5)); }
        var turns = [], spread = [];
        loaded.forEach(function (l, bi) {
          var bundle = idx.bundles[bi], keep = filters.active ? filters.sessions(l[1]) : null;
          var scores = [], bySession = [];
          l[0].forEach(function (list, ci) {
            var clause = Object.create(null), sessionBest = Object.create(null);
            list.forEach(function (e) {
              var w = idf(e[0]);
              eachPosting(e[2], function (s, p, imp) {
                if (keep && !keep[s]) { return; }
                var k = s * 1048576 + p, v = w * imp;
                if (!(clause[k] >= v)) { clause[k] = v; }
                var best = sessionBest[s];
                if (!best || best[0] < v) { sessionBest[s] = [v, p]; }
              });
            });
            scores.push(clause); bySession.push(sessionBest);
          });
          var first = scores[0], withTurn = Object.create(null);
          Object.keys(first).forEach(function (k) {
            var sum = 0;
            for (var c = 0; c < scores.length; c++) { var v = scores[c][k]; if (v === undefined) { return; } sum += v; }
            var n = Number(k), s = Math.floor(n / 1048576);
            withTurn[s] = true;
            turns.push({ bundle: bundle, session: s, position: n % 1048576, score: sum, tier: 0 });
          });
          Object.keys(bySession[0]).forEach(function (sk) {
            if (withTurn[sk]) { return; }
            var sum = 0, bestV = -1, bestP = 0;
            for (var c = 0; c < bySession.length; c++) {
              var v = bySession[c][sk]; if (!v) { return; }
              sum += v[0];
              if (v[0] > bestV) { bestV = v[0]; bestP = v[1]; }
            }
            spread.push({ bundle: bundle, session: Number(sk), position: bestP, score: sum / 2, tier: 1 });
          });
        });
        function order(a, b) {
          return b.score - a.score || (a.bundle.id < b.bundle.id ? -1 : a.bundle.id > b.bundle.id ? 1 : 0) ||
            a.session - b.session || a.position - b.position;
        }
        turns.sort(order); spread.sort(order);
        return { parsed: parsed, results: turns.concat(spread), turns: turns.length, sessions: spread.length };
      });
    });
  }

  /* The document chunk of a turn, loaded (its bundle's meta says which); the turn's
   * session and texts. */
  function documentOf(result) {
    return metaOf(result.bundle).then(function (meta) {
      var starts = meta.docStarts, found = 0, session = 0;
      /* Each chunk's first turn: its session's number after the previous chunk's, its position. */
      for (var i = 0; i + 1 < starts.length; i += 2) {
        session += starts[i];
        if (session < result.session || (session === result.session && starts[i + 1] <= result.position)) { found = i / 2; } else { break; }
      }
      return load(result.bundle.id, meta.docNames[found]);
    }).then(function (segments) {
      for (var j = 0; j < segments.length; j++) {
        var seg = segments[j];
        if (seg[0] !== result.session) { continue; }
        var doc = seg[5][result.position - seg[4]];
        if (doc) { return { name: seg[1], slug: seg[2], pages: seg[3], anchor: doc[0], fields: doc[1] }; }
      }
      throw new Error("turn not in its document chunk");
    });
  }

  /* How a word of a document matches the query: the clauses it satisfies. */
  function matcher(parsed) {
    return function (terms) {
      var hit = [];
      parsed.clauses.forEach(function (c, i) {
        for (var k = 0; k < terms.length; k++) {
          var t = terms[k];
          if (t === c.term || (c.prefix !== null && t.lastIndexOf(c.prefix, 0) === 0)) { hit.push(i); return; }
        }
      });
      return hit;
    };
  }
  /* True when a field's words hold every quoted phrase of the query. */
  function holdsPhrases(fields, parsed) {
    if (!parsed.phrases.length) { return true; }
    var sequences = fields.map(function (f) { return textTerms(f[2]); });
    return parsed.phrases.every(function (phrase) {
      return sequences.some(function (seq) {
        outer: for (var i = 0; i + phrase.length <= seq.length; i++) {
          for (var j = 0; j < phrase.length; j++) { if (seq[i + j] !== phrase[j]) { continue outer; } }
          return true;
        }
        return false;
      });
    });
  }

  /* ---- results on the page ---- */
  var PAGE = 8;
  /* Keystrokes closer than this make one query (a fast typist): the chunks of words half
   * typed are not loaded for nothing. Text that comes in one piece (a paste, a drop, an
   * autocompletion) is searched at once. */
  var DEBOUNCE_MS = 40;
  /* A keystroke that leaves a word of one or two letters or digits at the end (the start
   * of a word being typed; not Chinese or Japanese, whose one character is a prefix of its
   * own) waits this long: a person types the next letter within it, and the word or the
   * prefix of two letters would load a term chunk for nothing (about 90 KB at 100,000
   * sessions), with its results' texts. Left alone that long, it is searched. */
  var LETTER_MS = 300;
  var EXCERPT = 220;

  /* A count with thousands separators ("1,038"), without Intl: its first call loads the
   * locale's data, 15-25 ms of a pasted query's first results. */
  function num(n) { return String(Math.round(Number(n))).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
  function plural(n, word) { return num(n) + " " + word + (n === 1 ? "" : "s"); }
  function pageFile(pages, position) {
    var n = 1;
    for (var i = 0; i < pages.length; i++) { if (pages[i] <= position) { n = i + 2; } }
    return n === 1 ? "index.html" : "page-" + n + ".html";
  }
  function turnLabel(anchor) {
    var m = /^turn-(\d+)(?:-dup(\d+))?$/.exec(anchor);
    return m ? "turn " + m[1] + (m[2] ? " (copy " + m[2] + ")" : "") : anchor;
  }

  /* The excerpt of a turn: a window around the first match in the field where most of the
   * query's words are (and one more for the words it lacks), the matching words marked.
   * Text nodes and <mark> only; returns the anchor suffix of the part of the first. */
  function excerpt(doc, parsed, weights, into) {
    var match = matcher(parsed), scanned = [];
    doc.fields.forEach(function (f, fi) {
      var words = spans(f[2]), clauses = Object.create(null), first = Object.create(null);
      words.forEach(function (w, wi) {
        match(w.terms).forEach(function (c) { clauses[c] = true; if (!(c in first)) { first[c] = wi; } });
      });
      scanned.push({ field: fi, words: words, clauses: clauses, first: first, weight: weights[f[0]] || 1 });
    });
    /* The field holding the most of the query's words (the weightier first), then, when it
     * lacks some, the field holding most of those: at most two snippets. */
    function pick(wanted) {
      var best = null, bestScore = 0;
      scanned.forEach(function (s) {
        var n = wanted.filter(function (c) { return s.clauses[c]; }).length;
        var score = n * 100 + s.weight;
        if (n && score > bestScore) { best = s; bestScore = score; }
      });
      return best;
    }
    var all = parsed.clauses.map(function (c, i) { return i; });
    var first = pick(all);
    if (!first) { snippet(doc.fields[0] ? doc.fields[0][2] : "", [], -1, into, match); return doc.fields[0] ? doc.fields[0][1] : ""; }
    var missing = all.filter(function (c) { return !first.clauses[c]; });
    snippet(doc.fields[first.field][2], first.words, Math.min.apply(null, Object.keys(first.first).map(function (c) { return first.first[c]; })), into, match);
    var second = missing.length ? pick(missing) : null;
    if (second && second !== first) {
      into.appendChild(document.createTextNode(" · "));
      var at = Math.min.apply(null, missing.filter(function (c) { return c in second.first; }).map(function (c) { return second.first[c]; }));
      snippet(doc.fields[second.field][2], second.words, at, into, match, EXCERPT / 2);
    }
    return doc.fields[first.field][1];
  }
  /* Bidirectional controls (U+202A-U+202E, U+2066-U+2069) shown as escapes ("\\u202e"),
   * as the pages and the CLI show them: they would reorder what the reader sees. */
  var BIDI = /[\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return text.replace(BIDI, function (c) { return "\\u" + c.charCodeAt(0).toString(16); });
  }
  /* A window of text from a few words before the word at index ``at``, its matching
   * words marked: text nodes and <mark> elements only. */
  function snippet(text, words, at, into, match, length) {
    var start = 0;
    if (at >= 0) {
      var from = Math.max(0, at - 8);
      start = words[from].start;
      if (from > 0) { into.appendChild(document.createTextNode("… ")); }
    }
    var end = Math.min(text.length, start + (length || EXCERPT));
    var pos = start;
    words.forEach(function (w) {
      if (w.start < start || w.end > end || !match(w.terms).length) { return; }
      if (w.start > pos) { into.appendChild(document.createTextNode(visible(text.slice(pos, w.start)))); }
      var mark = document.createElement("mark");
      mark.textContent = visible(text.slice(w.start, w.end));
      into.appendChild(mark);
      pos = w.end;
    });
    if (end > pos) { into.appendChild(document.createTextNode(visible(text.slice(pos, end)))); }
    if (end < text.length) { into.appendChild(document.createTextNode(" …")); }
  }

  function setup() {
    var input = document.getElementById("search-input");
    if (!input) { return; }
    var status = document.getElementById("search-status");
    var list = document.getElementById("search-results");
    var more = document.getElementById("search-more");
    if (document.body.dataset.search !== "on") { input.disabled = true; return; }
    root = document.body.dataset.root || "";
    var kind = document.getElementById("filter-kind");
    var role = document.getElementById("filter-role");
    var statusFilter = document.getElementById("filter-status");
    var failed = document.getElementById("filter-failures");
    var seq = 0, current = null;

    function filters() {
      var active = !!((kind && kind.value) || (role && role.value) || (statusFilter && statusFilter.value) || (failed && failed.checked));
      return {
        active: active,
        /* The sessions of a bundle the filters keep (from its facets). */
        sessions: function (facets) {
          var sets = [];
          function members(text) { var out = Object.create(null), s = 0; numbers(text || "").forEach(function (d) { s += d; out[s] = true; }); return out; }
          if (kind && kind.value) { sets.push(members((facets.kind || {})[kind.value])); }
          if (role && role.value) { sets.push(members((facets.role || {})[role.value.slice(1)])); }
          if (statusFilter && statusFilter.value) { sets.push(members((facets.status || {})[statusFilter.value])); }
          if (failed && failed.checked) { sets.push(members(facets.failures)); }
          var keep = Object.create(null);
          Object.keys(sets[0] || {}).forEach(function (s) {
            if (sets.every(function (set) { return set[s]; })) { keep[s] = true; }
          });
          return keep;
        }
      };
    }

    function show(state, mine) {
      /* The texts of the results to show: a screen's, or four screens' when a phrase may
       * drop candidates (checked against the texts). */
      var slice = state.results.slice(state.shown, state.shown + (state.parsed.phrases.length ? PAGE * 4 : PAGE));
      var weights = state.weights;
      return Promise.all(slice.map(documentOf)).then(function (docs) {
        if (mine !== seq) { return; }
        var added = 0, i = 0;
        for (; i < slice.length && added < PAGE; i++) {
          var r = slice[i], doc = docs[i];
          if (!holdsPhrases(doc.fields, state.parsed)) { state.dropped++; continue; }
          var li = document.createElement("li");
          var a = document.createElement("a");
          var p = document.createElement("p");
          p.className = "excerpt";
          var suffix = excerpt(doc, state.parsed, weights, p);
          a.href = root + "sessions/" + encodeURIComponent(doc.slug) + "/" + pageFile(doc.pages, r.position) + "#" + doc.anchor + suffix;
          var name = document.createElement("code");
          name.textContent = visible(doc.name);
          a.appendChild(name);
          a.appendChild(document.createTextNode(" — " + turnLabel(doc.anchor)));
          li.appendChild(a);
          if (r.tier) {
            var note = document.createElement("span");
            note.className = "dim";
            note.textContent = " (the words are in separate turns of this session)";
            li.appendChild(note);
          }
          li.appendChild(p);
          list.appendChild(li);
          added++;
        }
        state.shown += i;
        if (more) { more.hidden = state.shown >= state.results.length; }
        status.textContent = summary(state);
        list.dataset.ms = String(Math.round((performance.now() - state.started) * 10) / 10);
        list.dataset.query = state.query;
      });
    }

    function summary(state) {
      var text;
      if (state.parsed.phrases.length) {
        var checked = Math.min(state.shown, state.results.length), kept = checked - state.dropped;
        text = plural(kept, "turn") + " of the first " + num(checked) + " candidates " + (kept === 1 ? "holds" : "hold") + " the phrase" +
          (state.results.length > checked ? " (" + num(state.results.length - checked) + " more to check)." : ".");
        return text;
      }
      text = (state.turns === 1 ? "1 turn matches" : plural(state.turns, "turn") + " match");
      if (state.sessions) { text += "; " + plural(state.sessions, "more session") + " " + (state.sessions === 1 ? "holds" : "hold") + " the words in separate turns"; }
      return text + ".";
    }

    /* A query; started: when its last keystroke came (the time shown in data-ms counts
     * from it, the debounce included). */
    function search(started) {
      var query = input.value, mine = ++seq;
      if (typeof started !== "number") { started = performance.now(); }
      list.textContent = "";
      if (more) { more.hidden = true; }
      if (!query.trim()) { status.textContent = "Type to search."; current = null; return; }
      run(query, filters()).then(function (found) {
        if (mine !== seq) { return null; }
        if (!found.parsed.clauses.length) { status.textContent = "Type a word to search."; return null; }
        current = { query: query, parsed: found.parsed, results: found.results, turns: found.turns || 0, sessions: found.sessions || 0,
          shown: 0, dropped: 0, started: started, weights: index ? null : null };
        return open().then(function (idx) {
          current.weights = idx.data.weights || {};
          if (!found.results.length) {
            status.textContent = "No turn matches.";
            list.dataset.ms = String(Math.round((performance.now() - started) * 10) / 10);
            list.dataset.query = query;
            return null;
          }
          return show(current, mine);
        });
      }).catch(function () {
        if (mine !== seq) { return; }
        status.textContent = "Search is not available: its index did not load (was the site built with --no-search, or only partly copied?).";
      });
    }

    var timer = null, typed = 0, composed = null;
    input.addEventListener("input", function (e) {
      /* Firefox follows compositionend with an input event of the text it just composed:
       * already searched. */
      var echo = composed !== null && !e.isComposing && e.inputType === "insertCompositionText" && input.value === composed;
      composed = null;
      if (echo) { return; }
      typed = performance.now();
      if (timer !== null) { clearTimeout(timer); timer = null; }
      /* (Not while an input method composes: each of its updates is a keystroke.) */
      var whole = !e.isComposing && (e.inputType === "insertFromPaste" || e.inputType === "insertFromDrop" || (e.data || "").length > 1);
      if (whole) { search(typed); return; }
      timer = setTimeout(function () { timer = null; search(typed); }, parse(input.value).short ? LETTER_MS : DEBOUNCE_MS);
    });
    /* An input method's text once it is composed: searched at once. */
    input.addEventListener("compositionend", function () {
      if (timer !== null) { clearTimeout(timer); timer = null; }
      composed = input.value;
      search(typed || performance.now());
    });
    input.addEventListener("focus", function () { open().catch(function () { return null; }); }, { once: true });
    [kind, role, statusFilter, failed].forEach(function (el) {
      if (el) { el.addEventListener("change", function () { if (input.value.trim()) { search(); } }); }
    });
    if (more) {
      more.addEventListener("click", function () {
        if (current) { current.started = performance.now(); show(current, seq); }
      });
    }
    if (input.value.trim()) { search(); }
  }

  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setup); } else { setup(); }
})();
