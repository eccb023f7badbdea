"""The model: presets and counts (``architecture``, torch-free) and the GPT (``gpt``)."""
