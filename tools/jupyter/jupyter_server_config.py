# The course's JupyterLab settings (`make lab` and Binder put this folder on JUPYTER_CONFIG_PATH).
# The file browser shows the lessons' notebooks only. Each lesson's text half (NN_topic.py, the jupytext pair
# authors edit), jupytext's settings (jupytext.toml) and the style sheets jupyterlab-rise loads for live slides
# (rise.css, NN_topic.css) are hidden from the listing but stay where jupytext and jupyterlab-rise look for them:
# hidden files are still read, served and saved. `make lab SHOW_ALL=1` lists everything.
c = get_config()  # noqa: F821 (jupyter's config loader defines get_config)
c.ContentsManager.hide_globs = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~",
                                "[0-9][0-9]_*.py", "[0-9][0-9]_*.css", "rise.css", "jupytext.toml"]
