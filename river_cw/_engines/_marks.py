"""What changed since a mark, for the Python engines' `mark` and `changed` (a changelog's records).

A mark copies the numbers of every weight, per block; `since` lists per block the weights added
after it, or whose numbers differ from the copy bit for bit. A new layout of the blocks leaves no
mark (`Blocks`, the layout operations the Python engines share). The compiled engines give the
same answers by noting the entries they write after a mark (river_cw/_engines/_table.h), so that theirs
cost in proportion to what was written.
"""

from __future__ import annotations

import math

Mark = list[tuple[dict, dict]]  # per block: the block itself and a copy of its numbers


def take(blocks: list[dict]) -> Mark:
    """A mark of `blocks` (dicts feature -> a list of floats), as they are now."""
    return [(block, {f: tuple(w) for f, w in block.items()}) for block in blocks]


def since(mark: Mark | None, blocks: list[dict]) -> list[dict] | None:
    """Per block, ``{feature: tuple of its numbers}`` of the weights of `blocks` added since
    `mark` or differing from it bit for bit, in the blocks' order; None without a mark or when
    `blocks` are not the blocks it was taken of (a new list of blocks, or other block objects)."""
    if mark is None or len(mark) != len(blocks):
        return None
    out = []
    for block, (marked_block, before) in zip(blocks, mark):
        if block is not marked_block:
            return None
        get = before.get
        out.append({f: tuple(w) for f, w in block.items() if not same_bits(w, get(f))})
    return out


def same_bits(numbers, before: tuple | None) -> bool:
    """Whether `numbers` are bit for bit `before` (None: absent then); finite floats, so equal
    values differ only in the sign of a zero."""
    return (
        before is not None
        and len(numbers) == len(before)
        and all(
            a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
            for a, b in zip(numbers, before)
        )
    )


class Blocks:
    """The layout operations of a Python engine's per-label blocks (``blocks``: dicts feature ->
    list of numbers, the first a mean or a shift; `_mark`, a `take` or None). Each lays the
    blocks out anew, so no mark survives it."""

    blocks: list[dict]
    _mark: Mark | None

    def add_block(self) -> None:
        self.blocks.append({})
        self._mark = None

    def lift(self) -> None:
        self.blocks.insert(0, {})
        self._mark = None

    def layout(self):
        """A snapshot of the block structure, for `restore_layout` after a failed learn."""
        return list(self.blocks)

    def restore_layout(self, layout) -> None:
        self.blocks = layout
        self._mark = None

    def reorder(self, order: list[int]) -> None:
        """Blocks in the new order: block i becomes the old block ``order[i]``."""
        self.blocks = [self.blocks[k] for k in order]
        self._mark = None

    def negate(self) -> None:
        """The Gaussian over ``-w`` (a binary model's labels swapped): every entry's first
        number flips: a mean; the arrowhead's a_j and its root's mu_b, since
        ``-w_j = -a_j + k_j (-b) - e_j``."""
        for w in self.blocks[0].values():
            w[0] = -w[0]
        self._mark = None
