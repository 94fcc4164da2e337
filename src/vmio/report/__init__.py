"""Reports over a stored campaign: HTML with inline SVG plots, PNGs, summary tables and comparisons.

``data`` groups a campaign's points over repetitions (spreads: ``vmio.stats.spread``); ``summary_table``
the summary table; ``compare`` the baseline and before/after comparisons; the ``plots_*``
modules draw the figures and ``page`` assembles the self-contained HTML file.
"""
