"""Drive an allocator against the scripted FakeBackend, as a trainer would (for tests of built-in and user allocators)."""

from pcbench.allocators import AllocContext, build_allocator
from pcbench.backends.fake import FakeBackend
from pcbench.config import MethodConfig
from pcbench.ledger import RolloutLedger
from pcbench.stream import PromptStream


def method(name, **kw):
    base = dict(name=name, n=16, gen_batch_size=12, max_rounds=10)
    if name == "pilot_commit":
        base.update(n_pilot=4, n_commit=12)
    base.update(kw)
    return MethodConfig(**base)


class Harness:
    """Drives an allocator the way a trainer does: next_batch, (update), after_update."""

    def __init__(self, cfg, rates, train_batch=4, seed=0, mode="exact", prompt_ids=None):
        ids = list(prompt_ids if prompt_ids is not None else rates.keys())
        self.alloc = build_allocator(cfg, train_batch, seed)
        self.stream = PromptStream(ids, seed)
        self.backend = FakeBackend(rates, mode=mode, seed=seed)
        self.ledger = RolloutLedger()
        self.step = 0
        self.log = []

    def run_step(self):
        self.step += 1
        ctx = AllocContext(self.stream, self.backend, self.ledger, self.step)
        batch = self.alloc.next_batch(ctx)
        post = self.alloc.after_update(self.step, self.ledger)
        row = {**self.ledger.close_step(), **batch.stats, **post}
        self.log.append(row)
        return batch, row
