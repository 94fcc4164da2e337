"""Reports over a stored campaign: HTML with inline SVG plots, PNGs, summary tables and comparisons.

``data`` groups a campaign's points over repetitions (spreads: ``vmio.stats.spread``); ``summary_table``
the summary table; ``seed000`` hitachi-nvme-2016's configurations and figures beside a campaign's;
``compare`` the baseline and before/after comparisons; the ``plots_*``
modules draw the figures and ``page`` assembles the self-contained HTML file.
"""
