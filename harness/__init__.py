"""harness: run, store and analyse thousands of language-model pretraining runs."""

__version__ = "0.1.0"
