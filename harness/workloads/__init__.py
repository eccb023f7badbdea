"""Workloads: what a run trains when it is not the GPT on tokens (:mod:`harness.workloads.base`).

Importing this package imports nothing else; :mod:`harness.workloads.registry` resolves names
without torch, and each workload's module imports torch when a run builds it.
"""
