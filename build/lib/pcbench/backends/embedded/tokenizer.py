"""A character tokenizer built offline (nothing downloaded), with `\\boxed{` as one token.

The synthetic task only needs digits, operators and the answer box, so a 24-symbol vocab
keeps the embedding tiny and every sequence short.
"""

from __future__ import annotations

SPECIALS = ("<pad>", "<bos>", "<eos>")
BOXED = "\\boxed{"
CHARS = tuple("0123456789+-*=()} ")


class CharTokenizer:
    def __init__(self):
        self.vocab = list(SPECIALS) + [BOXED] + list(CHARS)
        self.index = {tok: i for i, tok in enumerate(self.vocab)}
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        ids, i = [], 0
        while i < len(text):
            if text.startswith(BOXED, i):
                ids.append(self.index[BOXED])
                i += len(BOXED)
                continue
            ch = text[i]
            if ch not in self.index:
                raise ValueError(f"character {ch!r} is not in the embedded tokenizer's vocabulary")
            ids.append(self.index[ch])
            i += 1
        return ids

    def decode(self, ids) -> str:
        out = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i in (self.pad_id, self.bos_id):
                continue
            out.append(self.vocab[i])
        return "".join(out)
