"""Grading: collect -> run each submission (sandboxed, in parallel) -> merge -> report.

batch.py composes the steps; each other module is one step. This package imports nothing heavy,
so that the sandbox's init (`python -m autograder.grade.sandbox`) starts fast with the stdlib alone.
"""
