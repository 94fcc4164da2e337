"""What reading a big store costs: ``show --json``, ``export`` (csv, parquet), ``compare`` and ``report``.

Fills one store per size (default 1k, 10k and 100k points: a year of nightly runs is about that) through
the store's own API (``Store.record``: a run, its measured jobs' results with latency histograms, the
run's metrics and a capped number of samples per point), then times each command through ``vmio.cli.main``
and prints seconds, and seconds per point, at each size. ``report`` runs up to ``--report-max`` points
(default 1000: its plots are per group). It also times ``report`` of the demo's 42 points: a store of
``examples/demo.toml`` filled through the same API as heavy as the one ``make demo`` writes (per point: two
jobs' results with ~340-bin latency histograms, ~170 samples over 7 s, 6 per-second histograms of ~280
bins, ~25 run metrics; the real demo store is 2.6 MB).

Targets (issue 42): cost grows linearly with the points; ``show --json``, ``compare`` and ``export`` of
100k points <= 5 s each (50 µs a point); ``report`` of the demo's 42 points <= 2 s wall.

Measured for issue 42 (2 cores shared, load average 8-13: CPU seconds, which the load inflates about 1.5x
against the figures below, e.g. ``show --json`` of 100k 3.6-3.9 s here against 2.4 s; before: the tree
before the issue's changes, same stores, run one after the other): ``compare --baseline bare`` 1k 0.65 s,
10k 6.83 s, 100k 51.9 s (519 µs a point) before; 0.08 s, 0.62 s, 6.41 s (64 µs a point) after
(``report.data.load_points``: the stored summaries only, no detail table read or checked; host facts
decoded when read). ``export --format csv`` (with its 20 samples a point in ``.series``) 1k 0.39 s, 10k
3.32 s, 100k 30.9 s before; 0.26 s, 2.33 s, 26.2 s with the samples streamed from SQLite to the CSV writer
(262 µs a point, most of it reading and writing the 2M sample rows: about 2.3 µs a row to fetch, 5 µs to
write), a change left out when main's new export (headers of empty tables, Prometheus base units) was
merged: export is main's again, not at the target.
``report`` of the demo, one run each by turns: 7.25 s CPU before, 6.86 s after (45.9 s and 38.5 s wall
under that load); not at the target.

Measured for issue 42, second round (2 cores shared, load average 4-16, ``--before`` main's ``src`` by turns,
each command in a child process, its imports excluded; CPU µs a point): the ``.series`` and ``.oplat`` tables
stream from SQLite to the CSV writer in chunks of 5000 rows (their text cells made inert by SQLite:
``export.INERT_SQL``; each campaign's runs walked in id order, each run's rows sorted alone), the points
table is flattened without a call per field or cell (``fields.load_columns``, ``fields.HEAD_SHOWN``), JSON's
side tables go through json's C encoder (its separators carry the indentation: ``json.dumps(indent=...)`` is
pure Python), ndjson and Prometheus encode a point's labels once, and the cycle collector is paused for the
whole export. Every format's output is byte-identical to main's (``cmp`` on the 1k store with formula cells,
NULL values, tied ``oplat`` rows added, on tests/data/stores/dstore-profile-v9.db and demo000.db).
Two runs by turns at 10k (single runs each, the load moving them by up to 1.5x): ``export csv`` 301 -> 219
and 471 -> 257, ``export json`` 444 -> 265 and 432 -> 403, ``export ndjson`` 256 -> 175, ``export
prometheus`` 243 -> 137, ``export parquet`` 223 -> 200, ``compare`` 84 -> 63 and 84 -> 102, ``show --json``
66 -> 70; 100k: ``export csv`` 364 -> 267 (36.4 s -> 26.7 s CPU, 106 s -> 35 s wall), ``compare`` 72 -> 68
(in-process at 100k: points flattened 8.5 s -> 5.7 s CPU with the collector paused, the 2M sample rows
15.5 s -> 13.2 s, about 7 µs a row to fetch and write under that load). ``report`` of the demo (not changed
here): 10.8 s CPU before, 11.7 s after, 52 s and 48 s wall under that load.
Not at the targets: on this machine as loaded the floor is the C work of fetching and formatting each sample
row (``repr`` of a float took 2-3 µs in these hours against about 0.1 µs idle).

Measured for issue 42, third round (2 cores shared with five other engineers' work, load average 10-17 the
whole time, so every figure is about twice what an idle host gives; ``--before`` main's ``src``, by turns, one
run each, CPU seconds in a child with its imports excluded): the ``.series`` and ``.oplat`` tables of ``csv``
and ``json`` are one ``%``-format of each 5000-row chunk (SQLite reads each cell as the writer would take it,
``export.CSV_TEXT``/``CSV_NUMBER``/``JSON_TEXT``/``JSON_NUMBER``; a chunk holding a character the writer
would quote or escape goes through the writer as before), csv's points table is written by the CSV writer as
its cells are and then checked for a cell starting with a formula's sign (such a chunk goes through
``inert``), json's points go through ``jsontext.dumps``; ``PointRow.to_json`` and the stored figures are read
with one getter each. 100k: ``export csv`` 35.2 -> 23.5 s CPU (352 -> 235 µs a point; 96 s -> 64 s wall),
``export json`` 44.4 -> 30.6 s (444 -> 305), ``export ndjson`` 143 -> 127, ``export prometheus`` 108 -> 112,
``export parquet`` 223 -> 237 (not changed), ``compare`` 66 -> 58 (6.6 -> 5.8 s CPU, 17 s -> 13 s wall),
``show --json`` 54 -> 56 (not changed). 10k, the same run: ``export csv`` 273 -> 304, ``json`` 394 -> 290,
``compare`` 109 -> 94, ``show --json`` 50 -> 55: single runs under that load differ by 10-15 % from one to
the next (``show --json`` did not change). Every format's output is byte-identical to main's (``cmp`` of
both trees' exports of the 1k and 10k stores, of a 1k store given NULL values, formula-like, quoted, non-ASCII,
control-character and blob text cells, tied rows and odd numbers in ``.series`` and ``.oplat``, and of every
store in tests/data/stores; tests/test_export_tables.py holds the side tables and the points table against the
standard library's writers). Not at the target of 50 µs a point (shares from cProfile at 10k): a quarter of
csv's time is ``.series`` (20 rows a point, fetched and formatted), most of the rest its points table
(``point_rows``, then a dict per point); 70 % of ``compare`` is ``point_rows``, the rest the grouping.

Measured for issue 42, fourth round (2 cores shared with three other engineers' work, load average 2-12 while
measuring, 2-4 for the 100k figures: single runs move by 10-30 %, so 100k's ``csv``, ``json`` and
``compare`` are medians of 3 by turns; ``--before`` main's ``src``, CPU seconds in a child with its imports
excluded, wall beside): the points table of ``csv``, ``json`` and ``parquet`` is read straight from the run
rows, without a ``PointRow`` or ``to_json`` dict per point (``show_json.flat_values``: per shape of row,
``export.flat_row`` of a row whose values name their sources gives the keys and the source of each, as
``show --json``'s templates do); CSV writes each point's values as they come, JSON's points are one template
per tuple of keys filled by the C encoder a chunk at a time (``show_json.flat_text``); JSON's side tables are
checked for control characters with ``isprintable`` (the regular expression took 1 s of 10k points' 2.5 s);
``compare`` reads a point without its device, CPU and QEMU figures, from its tuple of columns
(``rows.summary_rows``), and skips the layer means when no point was traced. 100k, medians of 3: ``export
csv`` 14.95 -> 11.51 s CPU (150 -> 115 µs a point; 17.3 s -> 14.1 s wall), ``export json`` 24.44 -> 17.20 s
(244 -> 172; 27.4 s -> 18.0 s wall), ``compare`` 4.69 -> 3.11 s (47 -> 31; 4.8 s -> 3.2 s wall); one run
each: ``export parquet`` 156 -> 127, ``export ndjson`` 128 -> 117, ``export prometheus`` 98 -> 100 (not
changed), ``show --json`` 31 -> 31 (not changed). 10k, one run each: ``csv`` 155 -> 120, ``json`` 241 ->
177, ``parquet`` 183 -> 157, ``ndjson`` 114 -> 117, ``prometheus`` 91 -> 112 (not changed: the spread),
``compare`` 54 -> 32 (median of 3); 1k: ``json`` 357 -> 212, ``compare`` 111 -> 103 (start-up dominates).
Every format's output is byte-identical to main's (``cmp`` of both trees' exports of the 1k and 10k stores,
of every store in tests/data/stores and of a 1k store given NULL figures, formula-like, quoted, non-ASCII and
control-character text, traced layers, a dstore profile, storage facts, odd QEMU threads, optional fields,
tied and odd ``.series``/``.oplat`` rows; ``compare --baseline`` text and JSON of the 10k and odd stores and
``compare A B`` of demo000.db too); tests/test_export_tables.py and tests/test_compare_rows.py hold the new
readers against ``flat_row`` and ``point_rows`` of each point. ``compare`` is within the target; ``csv`` and
``json`` are not. Where their time goes (in-process at 100k, load ~3): csv's points 2.0 s to read and 1.8 s
to write, its ``.series`` (2M rows) 6.7 s; json's points 3.8 s, its ``.series`` 9.4 s. What remains is per
value: SQLite stepping and sorting each run's sample rows and Python's tuple of each (about 1 µs a row), and
``repr`` of each float (2 per sample row, ~35 per point: 0.3-0.8 µs each on this host), which the
byte-identical text needs (SQLite 3.40 writes a float with 15 significant digits, not Python's shortest
round trip, so it cannot format them); at 20 samples a point that alone is 40-60 µs a point.

Measured for issue 42, fifth round (2 cores shared with three other engineers' work, load average 3-10;
``--before`` main's ``src``, ``--repeat 3`` by turns, CPU seconds in a child with its imports excluded,
medians; two runs of 100k). What changed: the ``.series``/``.oplat`` text cells are read as they are and each
chunk's distinct texts checked once (``export._texts_are``: a chunk holds a few, its points' keys and sources,
picked out in C), not made inert and guarded by a ``CASE`` per cell in SQL and the chunk's whole text counted
and scanned (JSON: ``isascii``, three counts, a copy without newlines for ``isprintable``, three searches for
infinities, 2.6 s of 100k's 10 s); number cells are ``ifnull`` (the store refuses any other value in a number
column before a detail table is read: ``integrity.check_rows``); the JSON document is kept in pieces and
joined once (the ``.series`` text was copied five times, now twice); csv's points look for a formula's sign
after a cell's start only for the signs the text holds (one ``memchr`` pass each: 24 searches of the text were
6 % of 100k's csv). 100k: ``export csv`` 11.52 -> 9.79 s CPU (115 -> 98 µs a point) and 10.92 -> 10.11 (109 ->
101), ``export json`` 15.95 -> 12.77 (160 -> 128) and 15.61 -> 13.24 (156 -> 132); max RSS (``/usr/bin/time``)
csv 444 -> 368 MB, json 1131 -> 1035 MB. 10k: ``csv`` 114 -> 109, ``json`` 185 -> 140; 1k (start-up
dominates): ``csv`` 155 -> 164, ``json`` 196 -> 167. Every format's output is byte-identical to main's
(``cmp`` of both trees' csv, json, parquet, ndjson and prometheus of the 1k and 10k stores, of 100k's csv and
json, of every campaign in tests/data/stores, and of the 1k and 10k stores given formula-like, quoted, comma,
newline, CR, non-ASCII, control-character and backslash texts, NULL values, -0.0, 1e-300, 1e308 and 2^62 in
``.series``, tied, NULL and odd ``.oplat`` rows, odd point keys and the odd run columns of
tests/test_export_tables.py; an infinity or a text in ``sample.value`` is the same one error in both). Tried
and dropped: SQL writing each text cell as CSV (inert, quoted where needed: ``GLOB``/``CASE`` per cell) took
9.6 s CPU against 6.5 s for 100k's ``.series``; fetch chunks of 1000 or 20000 rows instead of 5000 made no
difference beyond the spread.

Not at the target, and why (in-process at 100k, load ~6, CPU s): opening and checking the sample rows 0.4,
csv's points 3.2 (1.8 reading them through ``show_json.flat_values``, 1.4 writing), its ``.series`` 5.5;
json's points 4.0, its ``.series`` 5.7. The ``.series`` floor is the stored form, one row per sample (2M rows
at 100k): at load ~12, stepping SQLite over them with nothing fetched took 1.5 s (leaving out the sort of each
run's rows by ``t, source, metric``, which no index gives, saved ~0.9 s of a fetch); fetching the five cells
as Python objects 1.8 s more; ``repr`` of the 4M floats 1.7 s (SQLite 3.40 cannot print a float as Python's
shortest round trip, and the output keeps it). A measurement (not a design) of the alternative: the same
samples stored one row per run, in export order, ``t`` and ``value`` as their ``repr`` texts (four texts, each
joined by a unit separator), give the byte-identical ``.series`` csv of 100k points in 1.6-1.7 s CPU (one
fetch per run, a split and one ``%`` per run, no float formatting) against 5.5 s. That is a schema change (one
migration of every ``sample`` row, its fixture, the readers ``Store.samples``, the campaign samples, report's
over-time figures, the integrity check of numbers held as text, ``vmio rm``) not made in this round.

Measured for issue 42, sixth round (2 cores shared with one other engineer's work, load average 2.0-3.5;
``--before`` main's ``src``, ``--repeat 3`` by turns, CPU seconds in a child with its imports excluded,
medians; each tree reads its own store: main's filled by main, this tree's a copy it migrated). What changed:
the store keeps a run's samples in one row (``vmio.store.packed``, migration 13: table ``sample`` holds each
run's ``n`` samples as four JSON lists in export order, ties as written, the numbers as ``repr`` of the float
SQLite's REAL column gave back: -0.0 as 0.0, NaN as null, an integer as a float), so export's ``.series``
copies each run's number texts (no float formatted, one fetch a run, no sort of 2M rows) and works out the
cells between ``t`` and ``value`` once per pair of source and metric lists; the lists' JSON is checked where
the table is first read (``integrity``), their items as finite numbers where they are read
(``packed.numbers``: a few ``in`` searches a list, an item with an exponent parsed); json's points are one
template per shape with QEMU's threads as slots (``show_json._flat_row_template``), not a nested dict printed
whole per VM point, the points list is indented by its templates, not copied, and the json document and csv's
``.series`` are written in their pieces (``files.write_atomic`` takes pieces), never joined and encoded
whole. 100k: ``export csv`` 10.56 -> 5.96 s CPU (106 -> 60 µs a point; 15.2 s -> 9.0 s wall), ``export
json`` 13.31 -> 6.41 s (133 -> 64; 16.3 s -> 8.5 s wall); 10k: ``csv`` 122 -> 59, ``json`` 131 -> 60; 1k
(start-up dominates): ``csv`` 187 -> 151, ``json`` 221 -> 121. An earlier run of this round (before the
pieces were written unjoined, load 1.8-3.1): 100k ``csv`` 98 -> 59, ``json`` 157 -> 76. Max RSS
(``/usr/bin/time``, 100k): csv 367 -> 298 MB, json 1034 -> 664 MB. The migration (``open (migrate)``: a copy
of main's store opened by this tree, once): 100k points (2M sample rows) 13.0 s wall, 7.9 s CPU, 24 MB max
RSS (the rows read in export order and packed a run at a time in C: ``groupby``, ``zip``, one JSON encoder;
a first version with a Python loop a row took 13.4 s CPU); 10k 1.2 s wall. Every output is byte-identical to
main's (``cmp``): csv, json, parquet, ndjson and prometheus exports, ``show --json``, ``show``, ``ls``,
``report`` (its time stamp cut) and ``compare --baseline`` (text and JSON) of the 1k and 10k stores, of every
campaign in tests/data/stores (the four stores and the schema fixtures, migrated on a copy) and of the 1k
store given 54 odd sample rows (unit separator, NUL, CR, newline, tab, quote, backslash, non-ASCII,
formula-like, empty and "null" texts, -0.0, 1e-300, 1e308, 2^62, -1.8e308, 5e-324, NULL values, ties in
time, source and metric); 100k's csv and json too. tests/test_store_samples.py holds the migration (every
sample of tests/data/stores/schema-v12-samples.sql against its rows read with sqlite3 before migrating), odd
samples recorded against a REAL row a sample, and a damaged packed row as one error. Not at the target of 50
µs a point on this host. Where the time goes now (in-process at 100k, load ~1.7, CPU s): opening the store
0.43 and checking the sample rows' JSON 0.26; csv's points 3.0 (1.7 reading them, ``show_json.flat_values``:
~10 µs of Python a point in ``_sources`` and ``_flat_points``, which trimming did not move; 1.3 the CSV
writer), its ``.series`` 1.3 (5.5 at load ~6 in the fifth round), writing and ``fsync`` ~0.5; json's points
3.0 (``flat_text``: the same reading, then the C encoder and one ``%`` a chunk 0.9), its ``.series`` 1.1,
writing and ``fsync`` of the 470 MB document ~1. What remains is the points table (per point: SQLite's 64
columns to Python, each point's sources and shape in Python) and the output's own size; the samples are no
longer the floor.

Measured for issue 42, seventh round (the quiet host: nothing else running, load under 1; ``--before`` main's
``src`` before the sixth round, ``--repeat 3`` by turns, medians; a command's CPU now counts the children it
reaped). What changed: ``export --format csv``/``json`` of a campaign of 2000 points or more, on two CPUs,
forks a child (``system.forked``, shared with ``report.drawing``) that makes the points table through its own
read-only connection while this process makes ``.series`` and ``.oplat``; the child's bytes come back
through an anonymous memory file (``export._beside``); one process below 2000 points, beside another thread,
on one CPU, or for a store read through a migrated copy in memory; a child that fails leaves its part to this
process (tests/test_export_forked.py: the same files either way, no child left). Byte-identical (``cmp``) to
the one-process export at 100k (csv's three files, json). 100k: ``export csv`` 10.25 -> **4.73 s wall**
(10.06 -> 6.03 s CPU: 101 -> 60 µs a point), ``export json`` 13.42 -> **6.59 s wall** (13.11 -> 7.68 s
CPU: 131 -> 77 µs a point); 10k: csv 1.19 -> 0.51 s wall (117 -> 74 µs CPU), json 1.68 -> 0.56 s (165 ->
79); 1k (one process, start-up dominates): csv 158 -> 94, json 158 -> 96 µs CPU. The migration of the 100k
store (its first open): 7.74 s wall, 7.18 s CPU, 24 MB max RSS. csv is within 5 s at 100k in wall time, not
in CPU; json is not within it: its phases at 100k (wall, in-process): opening and checks 0.47 s, ``.series``
and ``.oplat`` 1.6 s while the child makes the points (done 4.65 s after the start: its own open ~0.4, the
points ~3.5, its copy into memory), reading the child's bytes 0.3 s, writing and ``fsync`` of the 476 MB
document 1.8 s (``dd`` of the same file here: 0.76 s into the page cache, 1.9 s with ``fsync``). What would
cut it further: the points made by both processes (half each), and the child's bytes handed to the file by
the kernel (``copy_file_range``) instead of read back.

Measured for issue 42, eighth round (the quiet host, load under 1 at the start; ``--sizes
1000,10000,100000 --demo-repeat 0 --only "export csv,export json" --before <321d261>/src --repeat 3``, by
turns, medians). What changed: JSON's points are made by both processes. The child writes the points' text
into the document itself, from the first point on, while this process makes ``.series`` and ``.oplat``; then
this process asks it for a share and the child gives it the later half of the points it has not reached (their
first run id), which this process makes and writes after the child's text (``export._points_beside``,
``_until_asked``): no copy through memory, no read-back. The child's connection (``Store.reader``, csv's child
too) makes none of the open's checks, which this process made of the same file (it refuses another file put
in its place). 100k: ``export json`` 6.04 -> **3.53 s wall** (7.14 -> 5.26 s CPU over both processes: 71 ->
53 µs a point), ``export csv`` 5.31 -> **4.24 s wall** (6.91 -> 5.55 s CPU: 69 -> 55 µs); 10k: json 0.62 ->
0.43 s wall, csv 0.47 -> 0.41; 1k (one process): json 102 -> 96, csv 95 -> 89 µs CPU. Byte-identical to the
one-process export (``cmp`` of the 100k document). Phases of one json export at 100k (wall, in-process, three
runs): start-up 0.14 s, open and checks 0.41-0.63, ``.series`` and ``.oplat`` 1.5-1.9 (the child making
points meanwhile), this process' share ~0.5 (the child ends with it), writing the share and the rest 0.15-0.55,
``fsync`` 0.2-0.25, the rename over the last run's 476 MB file 0.1: 3.1-3.5 s.

Measured (2 cores shared with other developers' tests, load 2-3; ``--only 'show --json' --repeat 5``, CPU
seconds (user+sys) as median and range; each tree read its own copy of the same stores, one after the
other): ``show --json`` before ``store.show_json`` (each point a ``PointRow``, then a dict, then
``jsontext``): 1k 0.13 s (0.10-0.49), 10k 0.79 s (0.70-0.93), 100k 7.65 s (7.52-8.28); after: 1k 0.03 s
(0.03-0.29), 10k 0.22 s (0.22-0.25), 100k 2.38 s (2.28-2.85), 0.022-0.032 ms per point at each size. The
stores' host facts are 80 bytes; with a real point's (a VM point's 1.4 kB, with its own clock, as ``make
demo`` stores them) written into the 100k store, ``vmio show --json`` in a fresh process takes 3.3-3.5 s
CPU after, 10.2-11.3 s before (``/usr/bin/time``, two runs each, by turns).

``report`` of the demo as last measured (2 cores shared with other work, ``--demo-repeat 3 --before``
main's ``src``, medians): 7.0 s wall and CPU before figures were laid out from their own text
(``report.layout``, no constrained layout), the 21-panel device-over-time figures got one time axis, fewer
ticks and a legend per column, repeated legends became one, and a second process built and drew about half
of the figures (``report.drawing``); after: 2.6 s wall, 3.9 s CPU (the real demo store: 6.3-6.7 s before,
2.5-2.9 s wall and 4.0-4.5 s CPU after). With both cores taken by two busy loops: 10.7-11.4 s before,
5.4-6.0 s after. Of the ~4 s CPU: ~0.7 s starting Python and importing matplotlib, ~0.8 s building the 14
figures (74 panels), ~2 s drawing them (a third of it matplotlib building ticks), the rest reading the
store, the second process' copy-on-write pages and writing the page.

``report`` of the demo, third round (issue 42 item 3; 2 cores shared with other engineers' suites and TCG
guests, load average 10-13 throughout: a report that takes ~3 s on a quiet host took 17-74 s wall here, so
the wall figures say nothing and CPU seconds are inflated about 2.5x; ``--demo-repeat 4 --before`` main's
``src``, by turns): before 10.60, 11.87, 10.07, 9.64 s CPU (median 10.33), after 8.66, 11.06, 7.12, 7.68
(median 8.17, -21 %); wall medians 42.6 s and 36.6 s. What changed: the report no longer imports the
target kinds' rigs (``targets.traits``: no asyncio, fio launcher, libvirt or Ceph client; they were ~45 %
of the report's own imports beside matplotlib's); the two processes take sections from one queue,
costliest first, instead of a fixed share (in-process, same load: the child drew 4.87 s CPU and this
process 2.27 s before, 3.18 s and 3.55 s after, so the longer of the two, which the wall waits for, fell
27 %); the cycle collector is paused while figures are built, drawn and written (its walks were 12 % of
that CPU) and frozen at exit (Python's last collection walked every figure again: 0.2-0.5 s). The page
is byte-identical to main's but for its time stamp (``cmp``); max RSS 117 MB before, 121 MB after. Not
shown on this host: the 2 s wall goal. The critical path in CPU seconds (imports, reading the store, the
longer drawing share) fell from ~6.2 s to ~4.8 s here; scaled to the last quiet measurement (2.6 s wall)
that is ~2.0 s, an estimate, not a measurement. What remains is matplotlib: importing it (~0.6 s quiet),
and building and drawing 84 panels' ticks, texts and lines, which no setting that keeps the figures as they
are removes.

``report`` of the demo, fourth round (issue 42 item 3). Where the time went before (main's tree, one
process, the drawing child off; cProfile and ``-X importtime``): of 9.0 s profiled, 8.4 s were matplotlib,
2.9 s building figures (1.2 s of it making axes and their ticks) and 5.5 s drawing them (axes' ticks and
tick labels 3.5 s, lines and markers 1.4 s, legends 0.6 s); without the profiler the sections took 3.67 s
CPU (over-time's 42 panels 1.26 s, qemu-threads 0.68, latency-over-time 0.40, busy-cpu 0.34,
latency-distribution 0.30, curves 0.26, latency-vs-iops 0.24, iops 0.19), reading the store 0.08 s,
start-up and imports ~0.7 s (matplotlib's ~0.45 s of it, before the fork). What changed: every panel kind
the demo has (lines, markers, error bars, shaded spans on linear, log and categorical axes) is drawn as SVG
by ``report.chart`` itself, from the same calls the plot modules made on matplotlib's axes; the page keeps
the groups its tests read (``axes_N``, ``xtick_N``/``ytick_N``, ``<g id="<plot>--<series>">`` with the
line's every vertex and a ``<use>`` per marker); so are the sweeps' and the layers' stacked bars; matplotlib
is imported only for the per-operation box plots and PNGs (a chart replayed onto it on demand), so the
demo's report never imports it or numpy; the
knee figure merges each group's histograms once, not once per percentile; diagnose's capacity lookup no
longer imports ``advise.calibrate`` (fio's launcher, the host target's rig) for a host name. The page is
byte-identical to main's outside its ``<svg>`` elements (the same ``data-series`` and ``data-values``: ``cmp``
of both trees' pages of this store and of tests/data/stores/v2-campaign.db with the SVGs and time stamp cut).
All 15 figures' sections now take 0.07 s CPU together. ``--demo-repeat 5 --before`` main's ``src`` by turns,
both trees' bytecode compiled first (``python -m compileall``: this shell sets PYTHONDONTWRITEBYTECODE, and a
fresh checkout then compiles every module on each run), the host shared with three other engineers' work
(load average 2.1-3.4): before 7.98, 7.55, 8.55, 8.36, 7.79 s wall (median 7.98 s, 5.51 s CPU), after 1.02,
0.79, 0.96, 0.94, 0.98 s wall (median 0.96 s, 0.65 s CPU); an earlier run of this round (the drawing child
still forked; load 3.4-3.7): before median 7.40 s wall, 5.19 s CPU, after 0.82 s wall, 0.63 s CPU; at load
6-9 (my own tests running too): before median 19.75 s wall, 6.00 s CPU, after 2.85 s wall, 0.76 s CPU.
On the quiet host of the last round (main: 3.9 s wall, 6.2 s CPU) that CPU ratio, not measured there,
would put the report well under a second. What remains of the ~0.6 s CPU: Python's
start and vmio's imports (~0.3 s), reading the store and merging its histograms, diagnose's verdicts for
``#answer``, writing the page. The second drawing process (``report.drawing``) cost more than it saved for
a report of charts (7 runs by turns at load ~6, this tree with and without it: median 1.51 s against 1.11 s
wall, 0.71 s against 0.62 s CPU): it now starts only for matplotlib's per-operation box plots
(``page.worth_forking``). ``--png-dir`` draws every PNG through matplotlib as before (9.8 s wall).

Usage: python benchmarks/store_scale.py [--sizes 1000,10000,100000] [--report-max 1000] [--dir /var/tmp]
       [--demo-repeat 3] [--before OTHER_CHECKOUT/src] [--keep DIR] [--repeat N] [--only 'show --json']
       (``--sizes ''``: the demo's report only)

``--keep DIR`` keeps the filled stores in DIR (``s<points>.db``) and reuses them on the next run, so the
commands can be timed again without filling 100k points each time. ``--repeat N`` times each command N
times and prints each figure as the median with the range. The "after" side is the vmio this process
imports: run it from a checkout as ``PYTHONPATH=src python benchmarks/store_scale.py ...`` (without it, an
editable install's tree is timed against ``--before``). With ``--before`` each tree reads its own store: the
older tree's is filled through its own ``Store.record`` in a child (``s<points>.before.db``), this tree's is
a copy of it that this tree opens first, migrating it where the schemas differ (the migration's time and
memory are printed: a user's big store is migrated once, on its first open).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import vmio
from vmio.cli import main
from vmio.spec import loads_spec
from vmio.spec.model import Campaign, Point, QemuTarget
from vmio.store import RunRecord, Store

DEMO_SPEC = Path(__file__).resolve().parents[1] / "examples" / "demo.toml"
SAMPLES_PER_POINT = 20  # capped: a real point keeps ~100-600, the cost per row is the same
BLOCK_SIZES = ("4k", "16k", "64k", "256k", "1m")
OFFERED = (500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000)  # and "max": 10 rates


def spec_text(repetitions: int) -> str:
    """2 targets x 2 workloads x 5 block sizes x 10 offered rates = 200 points per repetition."""
    rates = ", ".join(str(r) for r in OFFERED)
    return f"""[campaign]
name = "scale"
repetitions = {repetitions}
[[target]]
name = "bare"
path = "/var/tmp/vmio-scale/bare.img"
size = "1G"
[[target]]
name = "vm"
kind = "qemu"
vcpus = 2
backing = ["/var/tmp/vmio-scale/vm.img"]
[[workload]]
name = "rr"
rw = "randread"
bs = [{", ".join(f'"{b}"' for b in BLOCK_SIZES)}]
offered_iops = [{rates}, "max"]
[[workload]]
name = "rw"
rw = "randwrite"
bs = [{", ".join(f'"{b}"' for b in BLOCK_SIZES)}]
offered_iops = [{rates}, "max"]
"""


@dataclass(frozen=True)
class Result:
    """One job's figures for one direction, in the shape the store's ``JobResult`` protocol asks."""

    host: str
    job: str
    role: str
    ddir: str
    iops: float
    bw_bytes: float
    total_ios: int
    runtime_ms: int
    lat_ns: Mapping[str, float | None]
    usr_cpu: float
    sys_cpu: float
    bins: Mapping[int, int] = field(default_factory=dict)


def result(rng: random.Random, ddir: str, bs: int, job: str) -> Result:
    iops = rng.uniform(1000, 50000)
    bins = {rng.randrange(600, 1200): rng.randrange(1, 5000) for _ in range(60)}  # fio's sparse log bins
    lat = {"min": 20_000.0, "mean": 90_000.0, "max": 4e6, "stddev": 10_000.0, "p50": 80_000.0,
           "p90": 120_000.0, "p99": 400_000.0, "p99.9": 1e6, "p99.99": 2e6}  # fmt: skip
    return Result(
        "localhost", job, "measure", ddir, iops, iops * bs, int(iops * 10), 10_000, lat, 5.0, 20.0, bins
    )


def fill(path: Path, points: int, seed: int = 1) -> tuple[float, float]:
    """A store of ``points`` points (a multiple of 200) through ``Store.record``; (wall, CPU) seconds."""
    campaign = loads_spec(spec_text(max(1, points // 200)), "scale.toml")
    rng = random.Random(seed)
    started, cpu = time.perf_counter(), time.process_time()
    with Store(path) as store:
        store.ensure_campaign("scale", "scale.toml", spec_text(max(1, points // 200)), campaign.canonical())
        for p in campaign.points()[:points]:
            ddir = "read" if p.workload == "rr" else "write"
            vm = p.target == "vm"
            rec = RunRecord(
                campaign="scale", point_key=p.key, target=p.target, target_kind="qemu" if vm else "host",
                workload=p.workload, bs=p.bs, offered_iops=p.offered_iops, load_processes=p.load_processes,
                repetition=p.repetition, status="done", started=0.0, ended=1.0,
                host={"hostname": "bench", "kernel": "6.1", "fio_version": "fio-3.33", "cores": 2},
                accel="tcg" if vm else None, fio_version="fio-3.33", qemu_version="10.0.2" if vm else None,
                device="nvme0n1",
                results=[result(rng, ddir, p.bs, f"measure.{j}") for j in range(2)],
                samples=[(0.5 * i, "dev:nvme0n1", "read_iops", rng.uniform(0, 1e5)) for i in range(SAMPLES_PER_POINT)],
                metrics={("dev:nvme0n1", "read_iops"): 1e4, ("dev:nvme0n1", "busy_pct"): 50.0,
                         ("cpu", "usr_pct"): 5.0, ("cpu", "sys_pct"): 20.0,
                         **({("qemu:vmio-0", "vcpu_pct"): 80.0, ("qemu:vmio-0", "iothread0_pct"): 30.0} if vm else {})},
            )  # fmt: skip
            store.record(rec)
    return time.perf_counter() - started, time.process_time() - cpu


DEMO_SOURCES = {
    "cpu": ("usr_pct", "sys_pct", "iowait_pct", "idle_pct", "steal_pct", "guest_pct"),
    "dev:vda": ("read_iops", "write_iops", "read_bw", "write_bw", "await_ms", "busy_pct", "queue", "wait_ms_per_s"),
    "qemu": ("vcpu_pct", "vcpu_max_pct", "iothread_pct", "iothread_max_pct", "main_pct", "main_max_pct",
             "other_pct", "other_max_pct"),
}  # fmt: skip


def latency_bins(rng: random.Random, n: int, median_ns: float) -> dict[int, int]:
    """``n`` occupied buckets of a latency histogram in fio's shape (64 buckets per power of two, ns)."""
    bins: dict[int, int] = {}
    while len(bins) < n:
        ns = int(rng.lognormvariate(0, 0.6) * median_ns)
        bucket = ns >> max(0, ns.bit_length() - 7) << max(0, ns.bit_length() - 7)
        bins[bucket] = bins.get(bucket, 0) + rng.randrange(1, 40)
    return bins


def demo_record(rng: random.Random, campaign: Campaign, p: Point) -> RunRecord:
    """One point of the demo as ``make demo`` stores it (the counts read from a real demo store)."""
    target = campaign.target(p.target)
    vms = target.vms if isinstance(target, QemuTarget) else 0
    ddir = "read" if "read" in p.workload else "write"
    hosts = [f"127.0.0.1:{34000 + i}" for i in range(vms)] or ["local"]
    jobs = [(hosts[j % len(hosts)], f"measure.{j // len(hosts) + 1}") for j in range(2)]  # 2 fio jobs
    results = [
        replace(result(rng, ddir, p.bs, job), host=h, bins=latency_bins(rng, 340, 80_000)) for h, job in jobs
    ]
    sources = [("cpu", DEMO_SOURCES["cpu"]), ("dev:vda", DEMO_SOURCES["dev:vda"])]
    sources += [(f"qemu:vmio-{v}", DEMO_SOURCES["qemu"]) for v in range(vms)]
    samples = [
        (t + 0.003 * t, src, m, rng.uniform(0, 100)) for t in range(1, 8) for src, ms in sources for m in ms
    ]
    hist_log = [
        (h, job, t * 1000 + 4, ddir, latency_bins(rng, 280, 80_000)) for h, job in jobs for t in (1, 2, 3)
    ]
    return RunRecord(
        campaign="demo", point_key=p.key, target=p.target, target_kind=target.kind, workload=p.workload,
        bs=p.bs, offered_iops=p.offered_iops, load_processes=p.load_processes, repetition=p.repetition,
        status="done", started=0.0, ended=8.0,
        host={"hostname": "bench", "kernel": "6.1", "cpu_model": "AMD EPYC", "cores": 2},
        accel="tcg" if vms else None, fio_version="fio-3.33",
        qemu_version=("7.2.22" if target.qemu is None else "10.0.2") if isinstance(target, QemuTarget) else None,
        device="vda", results=results, samples=samples, hist_log=hist_log,
        metrics={(src, m): rng.uniform(0, 100) for src, ms in sources for m in ms[:3]},
        samples_t0=1.7e9, measured_window=(2.7, 6.7),
    )  # fmt: skip


def fill_demo(path: Path, seed: int = 1) -> None:
    """The demo's campaign (``examples/demo.toml``, 42 points) in a store as heavy as a real one."""
    text = DEMO_SPEC.read_text()
    campaign = loads_spec(text, str(DEMO_SPEC))
    rng = random.Random(seed)
    with Store(path) as store:
        store.ensure_campaign("demo", str(DEMO_SPEC), text, campaign.canonical())
        for p in campaign.points():
            store.record(demo_record(rng, campaign, p))


def demo_report(work: Path, repeat: int, before: Path | None) -> None:
    """Time ``vmio report`` of the demo-like store as a user runs it (a fresh process: start-up and imports
    count) ``repeat`` times; with ``before`` (another checkout's ``src``) each time that code's report too,
    run by turns so both see the same machine."""
    demo = work / "demo.db"
    fill_demo(demo)
    argv = ["report", "demo", "-o", str(work / "demo.html"), "--db", str(demo)]
    codes = {"before": before, "after": Path(vmio.__file__).parents[1]} if before else {"report": None}
    print(f"report of the demo (42 points, {demo.stat().st_size / 1e6:.1f} MB store), goal <= 2 s wall:")
    took: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
    for i in range(repeat):
        for name, src in codes.items():
            took[name].append(wall_cpu := timed_process(argv, src))
            print(f"  {name} run {i + 1}: {wall_cpu[0]:.2f} s wall, {wall_cpu[1]:.2f} s CPU", flush=True)
    for name, runs in took.items():
        wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
        print(f"  {name} median of {len(runs)}: {wall:.2f} s wall, {cpu:.2f} s CPU")


def timed_process(argv: list[str], src: Path | None) -> tuple[float, float]:
    """(wall, CPU) seconds of ``python -m vmio ARGV`` in a child process, its own ``src`` first on the path
    (None: this one's); a failure stops the benchmark."""
    env = {**os.environ, "PYTHONPATH": str(src)} if src else None
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "vmio", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - started
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"store_scale: vmio {' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return wall, end.ru_utime + end.ru_stime - cpu.ru_utime - cpu.ru_stime


def _cpu() -> float:
    """This process' CPU seconds and those of the children it reaped (export's forked child: its work is the
    command's too)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds ``vmio ARGV`` took in this process, its output thrown away; a failure stops the
    benchmark. CPU seconds are the fairer figure on a shared machine."""
    out = io.StringIO()
    started, cpu = time.perf_counter(), _cpu()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    took = (time.perf_counter() - started, _cpu() - cpu)
    if code != 0:
        sys.exit(f"store_scale: vmio {' '.join(argv)} exited {code}")
    return took


# A child timing one command in-process (its imports done first: they are start-up, not the store's cost):
# ``python -c CHILD ARGV_JSON`` with one tree's ``src`` first on the path prints "WALL CPU".
CHILD = """
import contextlib, importlib, io, json, resource, sys, time
from vmio.cli import main
for name in ("vmio.report.data", "vmio.report.compare", "vmio.store.export", "vmio.report.page"):
    with contextlib.suppress(ImportError):
        importlib.import_module(name)
def cpu():  # this process' CPU and that of the children it reaped (export's forked child)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime
argv = json.loads(sys.argv[1])
started, before = time.perf_counter(), cpu()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(argv)
took = (time.perf_counter() - started, cpu() - before)
sys.exit(code) if code else print(*took)
"""


def timed_child(argv: list[str], src: Path) -> tuple[float, float]:
    """(wall, CPU) seconds ``vmio ARGV`` took in a child with ``src`` first on its path (imports excluded)."""
    wall, cpu = child(CHILD, [json.dumps(argv)], src).split()
    return float(wall), float(cpu)


def commands(
    db: Path,
    work: Path,
    points: int,
    report_max: int,
    run: Callable[[list[str]], tuple[float, float]] = timed,
) -> dict[str, Callable[[], tuple[float, float]]]:
    d = ["--db", str(db)]
    out = {
        "show --json": lambda: run(["show", "scale", "--json", *d]),
        **{
            f"export {fmt}": functools.partial(
                run, ["export", "scale", "--format", fmt, "-o", str(work / f"p.{fmt}"), *d]
            )
            for fmt in ("csv", "parquet", "json", "ndjson", "prometheus")
        },
        "compare": lambda: run(["compare", "scale", "--baseline", "bare", *d]),
    }
    if points <= report_max:
        out["report"] = lambda: run(["report", "scale", "-o", str(work / "r.html"), *d])
    return out


def figures(took: list[tuple[float, float]], points: int) -> str:
    """Median wall and CPU seconds of the repetitions, the CPU range, and CPU µs per point."""
    wall, cpu = statistics.median(w for w, _ in took), statistics.median(c for _, c in took)
    spread = f"{min(c for _, c in took):.2f}-{max(c for _, c in took):.2f}"
    return f"{wall:8.2f} {cpu:8.2f} {spread:>13}  {cpu / points * 1e6:12.0f}"


# A child filling a store through one tree's ``Store.record`` (``fill``): ``python -c FILL POINTS PATH``.
FILL = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
import store_scale
store_scale.fill(Path(sys.argv[2]), int(sys.argv[1]))
"""
# A child opening a store with one tree (which migrates an older one): prints "WALL CPU MAXRSS_KB".
OPEN = """
import resource, sys, time
from vmio.store import Store
started, cpu = time.perf_counter(), time.process_time()
Store(sys.argv[1]).close()
print(time.perf_counter() - started, time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def child(script: str, args: list[str], src: Path) -> str:
    """The output of ``python -c script args`` with ``src`` first on its path; a failure stops the benchmark."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        timeout=7200,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"store_scale: {args} ({src}) exited {done.returncode}: {done.stderr[-500:]}")
    return done.stdout


def stores(folder: Path, n: int, before: Path) -> tuple[Path, Path]:
    """The ``--before`` tree's store (filled through its own ``Store.record``) and this tree's (a copy of it
    opened by this tree, which migrates it where the schemas differ: the migration's wall and CPU seconds and
    the child's max RSS are printed)."""
    old, new = folder / f"s{n}.before.db", folder / f"s{n}.db"
    if not old.exists():
        started = time.perf_counter()
        child(FILL, [str(n), str(old)], before)
        print(f"{n:>8}  fill (before)   {time.perf_counter() - started:8.2f} s wall", flush=True)
    if not new.exists():
        shutil.copyfile(old, new)
        wall, cpu, rss = child(OPEN, [str(new)], Path(vmio.__file__).parents[1]).split()
        took = f"{float(wall):8.2f} s wall {float(cpu):8.2f} s CPU  max RSS {int(rss) / 1024:.0f} MB"
        print(f"{n:>8}  open (migrate)  {took}", flush=True)
    return old, new


def by_turns(dbs: tuple[Path, Path], work: Path, n: int, args: argparse.Namespace) -> None:
    """Each command timed in a child of the ``--before`` tree (on its store), then of this one (on its own),
    ``--repeat`` times by turns, printed side by side with CPU µs a point."""
    after = Path(vmio.__file__).parents[1]
    sides = {
        side: commands(db, work / side, n, args.report_max, functools.partial(timed_child, src=src))
        for side, src, db in (("before", args.before, dbs[0]), ("after", after, dbs[1]))
    }
    for side in sides:
        (work / side).mkdir(exist_ok=True)
    for name in sides["after"]:
        if args.only and name not in args.only.split(","):
            continue
        took: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(args.repeat):
            for side, chosen in sides.items():
                took[side].append(chosen[name]())
        cpu = {side: statistics.median(c for _, c in runs) for side, runs in took.items()}
        wall = {side: statistics.median(w for w, _ in runs) for side, runs in took.items()}
        print(
            f"{n:>8}  {name:<17} before {wall['before']:7.2f} s wall {cpu['before']:7.2f} s CPU "
            f"{cpu['before'] / n * 1e6:6.0f} µs/pt | after {wall['after']:7.2f} s wall {cpu['after']:7.2f} s CPU "
            f"{cpu['after'] / n * 1e6:6.0f} µs/pt",
            flush=True,
        )


def main_(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="1000,10000,100000", help="points per store, comma-separated")
    ap.add_argument("--report-max", type=int, default=1000, help="time report only up to this many points")
    ap.add_argument("--dir", default="/var/tmp", help="where the stores are built (a real disk)")
    ap.add_argument("--demo-repeat", type=int, default=3, help="times report of the demo runs")
    ap.add_argument(
        "--before",
        type=Path,
        help="another checkout's src: time its commands (and report of the demo) too, by turns",
    )
    ap.add_argument("--keep", type=Path, help="keep the filled stores in this folder and reuse them")
    ap.add_argument("--repeat", type=int, default=1, help="times each command is timed (median and range)")
    ap.add_argument("--only", help="time only these commands, comma-separated (e.g. 'show --json')")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = Path(tempfile.mkdtemp(prefix="vmio-scale-", dir=args.dir))
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    try:
        if args.demo_repeat:  # 0: the sizes only
            demo_report(work, args.demo_repeat, args.before)
        if not sizes:
            return 0
        print(
            f"{'points':>8}  {'command':<15} {'wall s':>8} {'CPU s':>8} {'CPU range':>13}  {'CPU µs/point':>12}"
        )
        for n in sizes:
            db = (args.keep or work) / f"s{n}.db"
            if args.before:
                dbs = stores(args.keep or work, n, args.before)
                by_turns(dbs, work, n, args)
                if not args.keep:
                    dbs[0].unlink()
            else:
                if not db.exists():
                    print(f"{n:>8}  {'fill (record)':<15} {figures([fill(db, n)], n)}", flush=True)
                chosen = commands(db, work, n, args.report_max)
                if args.only:
                    chosen = {name: run for name, run in chosen.items() if name in args.only.split(",")}
                for name, run in chosen.items():
                    print(f"{n:>8}  {name:<15} {figures([run() for _ in range(args.repeat)], n)}", flush=True)
            if not args.keep:
                db.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main_())
