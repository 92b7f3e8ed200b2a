"""Committed corpus files (a package so that setup.py ships its *.jsonl.gz and *.md)."""
