"""Grid expansion, a pure translator: grid YAML -> points (``grammar``) -> resolved run configs
(``resolve``, ``expr``), loaded by ``load``; ``preview`` summarises a grid for a dry run."""
