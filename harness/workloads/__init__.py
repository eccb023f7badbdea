"""Workloads: what a run trains, the GPT on tokens by default (:mod:`harness.workloads.base`).

Importing this package imports nothing else; :mod:`harness.workloads.registry` resolves names
without torch, and each workload's module imports torch when a run builds it.
"""
