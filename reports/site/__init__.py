"""``pdx publish``: a static site of runs, its pages (built in or a plugin's) and what they read."""
