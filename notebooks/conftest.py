"""Notebook collection: chapters and solved exercise masters run under strict nbval.

Student copies (``exercises/NN_topic.ipynb``) are meant to fail their checks; they are run by
``tests/test_exercises.py`` instead, which proves every check fails on them.
"""
collect_ignore_glob = ["exercises/[0-9]*.ipynb", "**/.ipynb_checkpoints/*"]
