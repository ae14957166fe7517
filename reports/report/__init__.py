"""``pdx report``: one self-contained HTML file comparing the selected runs."""
