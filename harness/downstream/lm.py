"""The harness's language model and its tokenizer as an lm-eval ``LM``
(lm-evaluation-harness ``docs/model_guide.md``): log-likelihoods of continuations, rolling
log-likelihoods of whole texts, greedy generation.

Every text is scored after the end-of-text token, as every training document follows one. Inputs
longer than the model's context (its ``seq_len``) are truncated on the left, so the scored
tokens keep the most recent context the model can see.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from lm_eval.api.model import LM
from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

from harness.data.tokenizers import Encoder

DEFAULT_MAX_GEN_TOKS = 256
"""Tokens generated when a task's ``generation_kwargs`` gives no ``max_gen_toks``."""

Pair = tuple[list[int], list[int]]
"""(context ids, continuation ids) of one scored request."""


class HarnessLM(LM):  # type: ignore[misc]  # lm_eval ships no types (no py.typed): LM is Any
    """A trained model and its tokenizer, evaluated by lm-eval."""

    def __init__(
        self,
        model: torch.nn.Module,
        encoder: Encoder,
        context: int,
        *,
        device: torch.device | str = "cpu",
        batch_size: int = 16,
    ) -> None:
        """Args:
        model: maps token ids (B, T) to logits (B, T, V), T <= ``context``.
        encoder: the tokenizer the model was trained with.
        context: the longest input the model takes (the run's ``seq_len``).
        device: where the model is.
        batch_size: requests scored in one forward pass.
        """
        super().__init__()
        self.model = model.eval()
        self.encoder, self.context, self.batch_size = encoder, context, batch_size
        self._device = torch.device(device)

    # --- tokens --------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[int]:
        """Token ids of ``text`` (no end-of-text token)."""
        return [int(t) for t in self.encoder.encode_docs([text])[0]] if text else []

    def pair(self, context: str, continuation: str) -> Pair:
        """Context ids (after the end-of-text token) and continuation ids of a request. Spaces
        ending the context move to the continuation, and the continuation's ids are those of the
        joined text past the context's, so that the two tokenize as the text they make."""
        stripped = context.rstrip()
        continuation = context[len(stripped) :] + continuation
        ctx = self.tokens(stripped)
        whole = self.tokens(stripped + continuation)
        cont = whole[len(ctx) :] if whole[: len(ctx)] == ctx else self.tokens(continuation)
        return [self.encoder.eot_token, *ctx], cont

    # --- scoring -------------------------------------------------------------------------------
    @torch.no_grad()
    def score(self, pairs: Sequence[Pair]) -> list[tuple[float, bool]]:
        """(summed log-probability of the continuation given the context, whether greedy
        decoding gives it) of each pair; inputs longer than the context are cut on the left."""
        out: list[tuple[float, bool] | None] = [None] * len(pairs)
        order = sorted(range(len(pairs)), key=lambda i: -len(pairs[i][0]) - len(pairs[i][1]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            rows = []
            for i in batch:
                ctx, cont = pairs[i]
                ids = (ctx + cont)[-(self.context + 1) :]
                rows.append((ids[:-1], ids[1:], min(len(cont), len(ids) - 1)))
            width = max(len(r[0]) for r in rows)
            x = torch.zeros((len(rows), width), dtype=torch.long)
            for j, (inp, _, _) in enumerate(rows):
                x[j, : len(inp)] = torch.tensor(inp)
            logp = torch.log_softmax(self.model(x.to(self._device)).float(), dim=-1).cpu()
            for j, (inp, target, n) in enumerate(rows):
                span = logp[j, len(inp) - n : len(inp)]  # (n, V): the continuation's positions
                want = torch.tensor(target[len(target) - n :])
                total = span.gather(1, want[:, None]).sum().item()
                out[batch[j]] = (total, bool((span.argmax(-1) == want).all()))
        return [o for o in out if o is not None]

    def loglikelihood(self, requests: list[Any]) -> list[tuple[float, bool]]:
        """lm-eval: each request's ``args`` is (context, continuation)."""
        results = self.score([self.pair(*r.args) for r in requests])
        for r, res in zip(requests, results, strict=True):
            self.cache_hook.add_partial("loglikelihood", r.args, res)
        return results

    def loglikelihood_rolling(self, requests: list[Any]) -> list[float]:
        """lm-eval: each request's ``args`` is (text,); the log-likelihood of the whole text, in
        disjoint windows of the model's context (each token scored once, after the end-of-text
        token for the first)."""
        results = []
        for r in requests:
            windows = [
                make_disjoint_window(w)
                for w in get_rolling_token_windows(
                    self.tokens(r.args[0]), self.encoder.eot_token, self.context, 1
                )
            ]
            total = sum(lp for lp, _ in self.score(windows))
            self.cache_hook.add_partial("loglikelihood_rolling", r.args, total)
            results.append(total)
        return results

    @torch.no_grad()
    def generate_until(self, requests: list[Any]) -> list[str]:
        """lm-eval: each request's ``args`` is (context, generation kwargs). Greedy decoding
        (sampling options are ignored) until a stop string of ``until``, the end-of-text token
        or ``max_gen_toks`` tokens; the context is cut on the left to fit."""
        results = []
        for r in requests:
            context, kwargs = r.args
            until = kwargs.get("until") or []
            stops = [until] if isinstance(until, str) else list(until)
            ids = [self.encoder.eot_token, *self.tokens(context)]
            new: list[int] = []
            text = ""
            for _ in range(int(kwargs.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS))):
                x = torch.tensor([(ids + new)[-self.context :]], device=self._device)
                nxt = int(self.model(x)[0, -1].argmax())
                if nxt == self.encoder.eot_token:
                    break
                new.append(nxt)
                text = self.encoder.decode(new)
                if any(s in text for s in stops):
                    break
            for s in stops:
                text = text.split(s)[0]
            self.cache_hook.add_partial("generate_until", r.args, text)
            results.append(text)
        return results
