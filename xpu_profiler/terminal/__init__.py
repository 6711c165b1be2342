"""The terminal's text: the Summary (``summary``, its multi-rank tables in ``ranks``) and a
diff (``diff``) as tables, names from traces escaped. Reads the Summary, never the analysis."""
