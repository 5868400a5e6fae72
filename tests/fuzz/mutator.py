"""A plain random mutator for the slow fuzz run: the same kinds of input as :mod:`.strategies` (seed edits,
spliced bombs, field swaps, opcode soup, hostile values), generated a hundred times faster than Hypothesis
draws them, so 100 000+ inputs take minutes. Deterministic for a given seed."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from .strategies import _OPS, BOMBS


class Mutator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def mutate(self, seeds: list[bytes]) -> bytes:
        rng = self.rng
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            op = rng.choice(("flip", "cut", "insert", "delete", "dup"))
            at = rng.randint(0, max(0, len(data) - 1))
            if op == "flip" and data:
                data[at] ^= rng.randint(1, 255)
            elif op == "cut":
                del data[at:]
            elif op == "insert":
                data[at:at] = rng.randbytes(rng.randint(1, 8))
            elif op == "dup":
                data[at:at] = data[at : at + rng.randint(1, 16)] * rng.randint(1, 50)
            elif data:
                del data[at : at + rng.randint(1, 8)]
        return bytes(data)

    def splice(self, seeds: list[bytes]) -> bytes:
        data = self.rng.choice(seeds)
        cuts = [i + 1 for i, b in enumerate(data) if b in b":[,"] or [0]
        at = self.rng.choice(cuts)
        return data[:at] + self.rng.choice(BOMBS) + data[at:]

    def json_value(self, depth: int = 0) -> Any:
        rng = self.rng
        kind = rng.randrange(8 if depth < 3 else 6)
        if kind == 6:
            return [self.json_value(depth + 1) for _ in range(rng.randint(0, 3))]
        if kind == 7:
            return {rng.choice(["$map", "$bytes", "$float", "a", "f"]): self.json_value(depth + 1)}
        return [
            None,
            True,
            rng.randint(-(2**70), 2**70),
            rng.random() * 1e6,
            "s" * rng.randint(0, 5),
            rng.choice(["", "\u2028", "\x00", "$map", "$bytes"]),
        ][kind]

    def swap(self, seeds: list[bytes]) -> bytes:
        doc = json.loads(self.rng.choice(seeds))
        slots: list[tuple[Any, Any]] = []
        stack = [doc]
        while stack:
            node = stack.pop()
            items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
            for k, v in items:
                slots.append((node, k))
                stack.append(v)
        if slots:
            parent, key = self.rng.choice(slots)
            parent[key] = self.json_value()
        return json.dumps(doc).encode("utf-8")

    def soup(self) -> bytes:
        return b"\x80\x04" + b"".join(self.rng.choice(_OPS) for _ in range(self.rng.randint(1, 30))) + b"."

    def text(self, seeds: list[str]) -> str:
        rng = self.rng
        base = rng.choice(seeds)
        at = rng.randint(0, len(base))
        # Any code point, lone surrogates included: parsers must refuse them as typed errors too.
        extra = "".join(
            chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x10FFFF)])) for _ in range(rng.randint(0, 4))
        )
        return base[:at] + extra + base[at + rng.randint(0, 3) :]

    def hostile(self) -> Any:
        rng = self.rng
        kind = rng.randrange(8)
        if kind < 3:
            return self.json_value()
        if kind == 3:
            return {rng.randint(0, 9)} if rng.random() < 0.5 else "a\udc80"
        if kind == 4:
            loop: list[Any] = [1]
            loop.append(loop)
            return loop
        if kind == 5:
            value: Any = self.json_value()
            for _ in range(rng.choice([150, 199, 201, 1000])):
                value = [value]
            return value
        if kind == 6:
            return rng.choice([10**5000, -(10**4400), 2**64])
        return rng.choice([b"bytes", object(), 1j, range(3)])

    def pick(self, seeds: list[bytes]) -> Callable[[], bytes]:
        """A maker of an unchanged seed, for :meth:`any_of`: the readers' success paths get fuzzed neighbours."""
        return lambda: self.rng.choice(seeds)

    def any_of(self, *makers: Callable[[], Any]) -> Any:
        return self.rng.choice(makers)()
