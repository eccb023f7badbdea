"""Token datasets: the registry (``catalogue``), preparation from packaged text (``prepare``,
``corpora``, ``tokenizers``) and deterministic batches (``batches``)."""
