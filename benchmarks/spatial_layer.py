"""How well the side-by-side bounds reproduce GQA's left/right edges, measured on real GQA graphs.

    python -m benchmarks.spatial_layer --graphs GQA/val_sceneGraphs.json           # GQA's own graphs
    python -m benchmarks.spatial_layer --graphs GQA/val_sceneGraphs.json --grid    # and nearby bounds

GQA's graphs relate two objects "to the left of" / "to the right of" when they stand side by side; a graph
without that layer gets it from its boxes (`core.geometry.side_by_side`, the hygiene stage). The bounds
must select only pairs GQA itself relates (precision: whatever is added is what GQA would say) and as many
of them as they can (recall). Over every unordered pair of objects in the graphs that store a left/right
edge, prints the pairs the bounds select, the share GQA stores (precision) and the share of GQA's stored
pairs they select (recall); with `--grid`, the same for nearby bounds. Graphs are read as a run reads them
(`core/gqa/loader.py`), before any cleaning.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from hardneg.core import geometry
from hardneg.core.gqa.hygiene import related_across
from hardneg.core.gqa.loader import load_graphs
from hardneg.core.records import SceneGraph


def pairs(graph: SceneGraph) -> Iterator[tuple[str, str, bool]]:
    """(a, b, whether GQA stores a left/right edge between them either way) for each unordered pair."""
    stored = related_across(graph)
    ids = list(graph.objects)
    for k, a in enumerate(ids):
        for b in ids[k + 1 :]:
            yield a, b, frozenset((a, b)) in stored


def measure(graphs: list[SceneGraph], bounds: tuple[float, float, float]) -> tuple[int, int, int]:
    """(pairs selected, of them stored by GQA, pairs GQA stores) under `bounds`."""
    selected = hits = stored = 0
    for g in graphs:
        for a, b, is_stored in pairs(g):
            side = geometry.side_by_side(g.objects[a].box, g.objects[b].box, g.width, bounds)
            selected += side is not None
            hits += side is not None and is_stored
            stored += is_stored
    return selected, hits, stored


def row(label: str, got: tuple[int, int, int]) -> str:
    selected, hits, stored = got
    return f"{label:<36} {selected:>9,} {hits / max(1, selected):>10.1%} {hits / max(1, stored):>7.1%}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=Path, required=True, help="a GQA *_sceneGraphs.json (or a folder of them)")
    ap.add_argument("--grid", action="store_true", help="also measure nearby bounds")
    args = ap.parse_args(argv)
    graphs = [c.graph for c in load_graphs(args.graphs) if c.graph is not None]
    layered = [g for g in graphs if any(s for *_, s in pairs(g))]
    if not layered:
        print(f"{args.graphs}: no graph stores a left/right edge: nothing to measure against")
        return 1
    n = sum(1 for g in layered for _ in pairs(g))
    print(f"{len(layered)} of {len(graphs)} graphs store left/right edges; {n:,} object pairs\n")
    print(f"{'bounds (overlap, band, reach)':<36} {'selected':>9} {'precision':>10} {'recall':>7}")
    now = (geometry.SIDE_OVERLAP, geometry.BAND, geometry.REACH)
    print(row(f"{now} (the default)", measure(layered, now)))
    if args.grid:
        for bounds in sorted({(o, b, r) for o in (0.0, 0.3, 0.5) for b in (0.5, 0.6, 0.7) for r in (0.1, 0.2, 0.3)}):
            if bounds != now:
                print(row(str(bounds), measure(layered, bounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
