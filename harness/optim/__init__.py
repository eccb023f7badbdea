"""The optimizer zoo: ``torch.optim.Optimizer`` subclasses, registered by name, and the schedules.

Each optimizer is constructed like torch's own: ``cls(params_or_groups, lr=..., **hparams)``,
and updates with multi-tensor ``torch._foreach_*`` ops.

Layout: ``spec.py`` (how an optimizer is declared: the run fields it reads, its own
hyperparameters), ``builtin.py`` (the built-in declarations), ``registry.py`` (name -> spec),
``base.py`` (shared step skeleton), ``adam.py`` (adamw, adam, rmsprop, coupled_adam), ``sgd.py``
(sgd, sgd_cclip), ``sign.py`` (signsgd, signum, lion), ``muon.py``, ``routing.py`` (param
groups), ``composite.py`` (per-group optimizer override), ``build.py`` (run -> optimizer),
``schedule.py`` (learning-rate schedules). Everything but the optimizers' own modules and
``build``/``routing``/``composite`` is torch-free.
"""
