"""Naive versions in the article's style, kept for the notebooks' "pitfall" sections.

Each module here mirrors an agentlab module (``naive/llm.py`` beside ``llm.py``) with a small
version written the way the article writes it, defects included, so a notebook and a benchmark
can run both on the same workload and measure the difference. Do not use these in real code.
"""
