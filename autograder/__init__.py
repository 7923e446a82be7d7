"""The Triton course's tools: build the notebooks, grade submissions, and the kit every notebook shares."""

__version__ = "0.1.0"
